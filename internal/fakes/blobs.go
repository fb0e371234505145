package fakes

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5" //nolint:gosec // Blob Storage's Content-MD5, not security
	"fmt"
	"slices"
	"sync"

	"github.com/bifrost/bifrost-migrate/store"
)

// Blobs is one blob container in memory, with the methods of
// azure.BlobStore (migrate.BlobStore, verify.BlobLister) and
// azure.BlobWriter (fixtures.BlobWriter). It always exists. It is safe for
// concurrent use.
type Blobs struct {
	mu    sync.Mutex
	blobs map[string][]byte
}

// NewBlobs returns an empty container.
func NewBlobs() *Blobs { return &Blobs{blobs: map[string][]byte{}} }

// CreateContainer does nothing: the container exists.
func (b *Blobs) CreateContainer(ctx context.Context) error { return nil }

// Upload writes data to the blob name, replacing any blob there.
func (b *Blobs) Upload(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("upload blob %s: %w", name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blobs == nil {
		b.blobs = map[string][]byte{}
	}
	b.blobs[name] = bytes.Clone(data)
	return nil
}

// List calls fn for every blob in name order (byte order, as the
// service), with the blobs as they were when List was called; fn may call
// the fake.
func (b *Blobs) List(ctx context.Context, fn func(name string, size int64) error) error {
	type blob struct {
		name string
		size int64
	}
	b.mu.Lock()
	list := make([]blob, 0, len(b.blobs))
	for n, data := range b.blobs {
		list = append(list, blob{n, int64(len(data))})
	}
	b.mu.Unlock()
	slices.SortFunc(list, func(x, y blob) int { return cmp.Compare(x.name, y.name) })
	for _, bl := range list {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list blobs: %w", err)
		}
		if err := fn(bl.name, bl.size); err != nil {
			return err
		}
	}
	return nil
}

// PutIfAbsent uploads data as blob name unless it exists, as
// azure.BlobStore.PutIfAbsent: an existing blob with the same MD5 is
// success with created false; one with other content is an error wrapping
// store.ErrBlobConflict.
func (b *Blobs) PutIfAbsent(ctx context.Context, name string, data []byte, contentType string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("upload blob %s: %w", name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.blobs[name]; ok {
		if md5.Sum(old) != md5.Sum(data) { //nolint:gosec // see import
			return false, fmt.Errorf("blob %s exists with %d bytes, ours is %d bytes: %w", name, len(old), len(data), store.ErrBlobConflict)
		}
		return false, nil
	}
	if b.blobs == nil {
		b.blobs = map[string][]byte{}
	}
	b.blobs[name] = bytes.Clone(data)
	return true, nil
}

// Blob returns the content of blob name.
func (b *Blobs) Blob(name string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.blobs[name]
	return bytes.Clone(data), ok
}

// Snapshot returns every blob's content by name.
func (b *Blobs) Snapshot() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]string, len(b.blobs))
	for n, data := range b.blobs {
		out[n] = string(data)
	}
	return out
}
