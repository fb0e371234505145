package migrate

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Blob Storage's Content-MD5
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// In-memory stand-ins for the pipeline's own ports (RowSource, DocWriter,
// BlobStore), for unit tests of the pipeline logic. The Azure adapters are
// tested against the emulators; so is the whole command (cmd/run_test.go).

// fakeSource serves tables from memory in key order, pageSize rows a
// page, with continuations naming the next row's keys like the service.
type fakeSource struct {
	pageSize int
	tables   map[string][]transform.Row

	mu    sync.Mutex
	reads map[string]int // pages read per table
}

func newFakeSource(t testing.TB, pageSize int) *fakeSource {
	t.Helper()
	s := &fakeSource{pageSize: pageSize, tables: map[string][]transform.Row{}, reads: map[string]int{}}
	for _, table := range fixtures.Tables() {
		rows, err := fixtures.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		s.add(table, rows...)
	}
	return s
}

// add adds rows to table, keeping key order.
func (s *fakeSource) add(table string, rows ...transform.Row) {
	s.tables[table] = append(s.tables[table], rows...)
	slices.SortStableFunc(s.tables[table], func(a, b transform.Row) int {
		return transform.CompareKeys(a.PartitionKey, a.RowKey, b.PartitionKey, b.RowKey)
	})
}

func (s *fakeSource) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, err
	}
	s.mu.Lock()
	s.reads[table]++
	s.mu.Unlock()
	var rows []transform.Row
	for _, r := range s.tables[table] {
		if q.Match(r.PartitionKey, r.RowKey, r.Timestamp) {
			rows = append(rows, r)
		}
	}
	i := 0
	if !from.IsZero() {
		i = slices.IndexFunc(rows, func(r transform.Row) bool {
			return r.PartitionKey == from.NextPartitionKey && r.RowKey == from.NextRowKey
		})
		if i < 0 {
			return store.Page{}, fmt.Errorf("fake: bad continuation %+v", from)
		}
	}
	end := min(i+s.pageSize, len(rows))
	p := store.Page{}
	for _, r := range rows[i:end] {
		r.Table = table
		if len(q.Select) > 0 {
			props := map[string]transform.Value{}
			for _, name := range q.Select {
				if v, ok := r.Props[name]; ok {
					props[name] = v
				}
			}
			r.Props = props
		}
		p.Rows = append(p.Rows, r)
	}
	if end < len(rows) {
		p.Next = store.Cursor{NextPartitionKey: rows[end].PartitionKey, NextRowKey: rows[end].RowKey}
	}
	return p, nil
}

func (s *fakeSource) Count(ctx context.Context, table string, q store.Query) (int64, error) {
	var n int64
	err := store.Scan(ctx, s, "", table, q, store.Cursor{}, func(p store.Page) error {
		n += int64(len(p.Rows))
		return nil
	})
	return n, err
}

// fakeDocs keeps docs by container/scope/id. before, when set, runs
// before each write and may block or fail it.
type fakeDocs struct {
	mu     sync.Mutex
	docs   map[string][]byte
	writes int
	before func(ctx context.Context, container, scope, id string) error
}

func newFakeDocs() *fakeDocs { return &fakeDocs{docs: map[string][]byte{}} }

func (d *fakeDocs) Upsert(ctx context.Context, container, scope, id string, doc []byte) (store.WriteResult, error) {
	if d.before != nil {
		if err := d.before(ctx, container, scope, id); err != nil {
			return store.WriteResult{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return store.WriteResult{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs[container+"/"+scope+"/"+id] = bytes.Clone(doc)
	d.writes++
	return store.WriteResult{RequestCharge: 1.5}, nil
}

func (d *fakeDocs) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writes
}

func (d *fakeDocs) snapshot() map[string][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string][]byte, len(d.docs))
	for k, v := range d.docs {
		out[k] = v
	}
	return out
}

// fakeBlobs is a blob container in memory with create-only uploads.
type fakeBlobs struct {
	mu    sync.Mutex
	blobs map[string][]byte
}

func newFakeBlobs(t testing.TB) *fakeBlobs {
	t.Helper()
	b := &fakeBlobs{blobs: map[string][]byte{}}
	bs, err := fixtures.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, blob := range bs {
		b.blobs[blob.Path] = blob.Data
	}
	return b
}

func (b *fakeBlobs) List(ctx context.Context, fn func(name string, size int64) error) error {
	b.mu.Lock()
	names := make([]string, 0, len(b.blobs))
	for n := range b.blobs {
		names = append(names, n)
	}
	b.mu.Unlock()
	slices.Sort(names)
	for _, n := range names {
		b.mu.Lock()
		size := int64(len(b.blobs[n]))
		b.mu.Unlock()
		if err := fn(n, size); err != nil {
			return err
		}
	}
	return nil
}

func (b *fakeBlobs) PutIfAbsent(ctx context.Context, name string, data []byte, contentType string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.blobs[name]; ok {
		if md5.Sum(old) != md5.Sum(data) { //nolint:gosec
			return false, fmt.Errorf("blob %s: %w", name, store.ErrBlobConflict)
		}
		return false, nil
	}
	b.blobs[name] = bytes.Clone(data)
	return true, nil
}

func (b *fakeBlobs) ContentMD5(ctx context.Context, name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := md5.Sum(b.blobs[name]) //nolint:gosec
	return sum[:], nil
}

func (b *fakeBlobs) snapshot() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]string{}
	for k, v := range b.blobs {
		out[k] = string(v)
	}
	return out
}

// recordingProgress records what the pipeline reports.
type recordingProgress struct {
	mu       sync.Mutex
	totals   map[string]int64
	advanced map[string]int64
	done     []string
	messages []string
}

func newRecordingProgress() *recordingProgress {
	return &recordingProgress{totals: map[string]int64{}, advanced: map[string]int64{}}
}

func (p *recordingProgress) Total(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals[table] = n
}

func (p *recordingProgress) Resumed(table string, n int64) { p.Advance(table, n) }

func (p *recordingProgress) Advance(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanced[table] += n
}

func (p *recordingProgress) TableDone(table string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = append(p.done, table)
}

func (p *recordingProgress) Message(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, msg)
}

func (p *recordingProgress) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.messages, "\n")
}
