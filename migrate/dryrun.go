package migrate

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Blob Storage's Content-MD5, not security
	"strings"
	"sync"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// BlobInspector is an optional interface of a BlobStore. A dry run uses
// it to tell whether an existing blob has the content it would upload,
// as PutIfAbsent would; without it, a dry run compares sizes only.
type BlobInspector interface {
	// ContentMD5 returns the Content-MD5 the service stores for blob name,
	// or nil when it stores none.
	ContentMD5(ctx context.Context, name string) ([]byte, error)
}

// dryRunDocs is the DocWriter of a dry run: it writes nothing and
// succeeds (restic's dry-run backend is the model). It is safe for
// concurrent use.
type dryRunDocs struct{}

func (dryRunDocs) Upsert(context.Context, string, string, string, []byte) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}

// dryRunBlobs is the BlobStore of a dry run: List reads the real
// container; PutIfAbsent writes nothing and answers from that listing what
// the real PutIfAbsent would (created, same content, or store.ErrBlobConflict).
// It is safe for concurrent use.
type dryRunBlobs struct {
	inner BlobStore

	mu     sync.Mutex
	listed transform.BlobIndex // what List saw, plus what PutIfAbsent pretended to create
}

func newDryRunBlobs(inner BlobStore) *dryRunBlobs {
	return &dryRunBlobs{inner: inner, listed: transform.BlobIndex{}}
}

func (d *dryRunBlobs) List(ctx context.Context, fn func(name string, size int64) error) error {
	return d.inner.List(ctx, func(name string, size int64) error {
		d.remember(name, size)
		return fn(name, size)
	})
}

func (d *dryRunBlobs) remember(name string, size int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.listed.Add(name, size)
}

func (d *dryRunBlobs) PutIfAbsent(ctx context.Context, name string, data []byte, contentType string) (bool, error) {
	id, file, _ := strings.Cut(name, "/")
	b, known := transform.ParseBlobName(file)
	d.mu.Lock()
	size, exists := d.listed.Facts(id).Size(b)
	d.mu.Unlock()
	if !known || !exists {
		// Uploads are always one of the known names (transform.Upload);
		// anything else is taken as new.
		d.remember(name, int64(len(data)))
		return true, nil
	}
	if size != int64(len(data)) {
		return false, store.ErrBlobConflict
	}
	if in, ok := d.inner.(BlobInspector); ok {
		sum, err := in.ContentMD5(ctx, name)
		if err != nil {
			return false, err
		}
		if want := md5.Sum(data); sum != nil && !bytes.Equal(sum, want[:]) { //nolint:gosec
			return false, store.ErrBlobConflict
		}
	}
	return false, nil
}

// dryRunStore is the DocStore of a dry run: reads go to the real store,
// writes do nothing and succeed. It is safe for concurrent use.
type dryRunStore struct{ inner DocStore }

func (d dryRunStore) Read(ctx context.Context, container, scope, id string) ([]byte, string, bool, float64, error) {
	return d.inner.Read(ctx, container, scope, id)
}

func (dryRunStore) Create(context.Context, string, string, string, []byte) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}

func (dryRunStore) Replace(context.Context, string, string, string, []byte, string) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}

func (dryRunStore) Delete(context.Context, string, string, string, string) (store.WriteResult, error) {
	return store.WriteResult{}, nil
}

// dryRunRows is the RowStore of a dry run: reads go to the real tables,
// writes do nothing and succeed. It is safe for concurrent use.
type dryRunRows struct{ inner RowStore }

func (d dryRunRows) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	return d.inner.ReadPage(ctx, table, q, from)
}

func (dryRunRows) Insert(context.Context, string, []byte) (string, error) { return "", nil }

func (dryRunRows) Replace(context.Context, string, []byte, string) (string, error) { return "", nil }

func (dryRunRows) Delete(context.Context, string, store.Key, string) error { return nil }
