package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Unit tests of reverse's engine with in-memory tables and docs that keep
// ETags like the services, for the interleavings the emulators cannot
// produce on demand: a doc changed between reverse's row write and its
// sync, the change feed sending a doc twice (an older copy after a newer
// one), the feed's _lsn, a row the Table service refuses. The command runs
// against the emulators in cmd/reverse_test.go.

// memRows is a RowStore in memory: each write stamps the row with the next
// second of its clock and an ETag that carries it, as the Table service
// does; Replace and Delete check If-Match. refuse, when set, fails writes
// of the rows it names for good.
type memRows struct {
	mu     sync.Mutex
	clock  time.Time
	rows   map[string]transform.Row
	refuse func(table, rowKey string) bool
}

func newMemRows() *memRows {
	return &memRows{clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), rows: map[string]transform.Row{}}
}

func memKey(table, pk, rk string) string { return table + "|" + pk + "|" + rk }

func (f *memRows) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var p store.Page
	for _, r := range f.rows {
		if r.Table == table && (q.Key == nil || (q.Key.PartitionKey == r.PartitionKey && q.Key.RowKey == r.RowKey)) {
			p.Rows = append(p.Rows, r)
		}
	}
	return p, nil
}

// write stores entity as a new version of its row (the caller holds mu).
func (f *memRows) write(table string, entity []byte) (string, error) {
	r, err := transform.DecodeEntity(table, entity)
	if err != nil {
		return "", err
	}
	if f.refuse != nil && f.refuse(table, r.RowKey) {
		return "", &store.PermanentError{StatusCode: 400, Reason: "400 PropertyValueTooLarge"}
	}
	f.clock = f.clock.Add(time.Second)
	r.Table, r.Timestamp = table, f.clock
	r.ETag = `W/"datetime'` + url.QueryEscape(f.clock.Format("2006-01-02T15:04:05.0000000Z")) + `'"`
	f.rows[memKey(table, r.PartitionKey, r.RowKey)] = r
	return r.ETag, nil
}

func (f *memRows) Insert(ctx context.Context, table string, entity []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, _ := transform.DecodeEntity(table, entity)
	if _, ok := f.rows[memKey(table, r.PartitionKey, r.RowKey)]; ok {
		return "", store.ErrExists
	}
	return f.write(table, entity)
}

func (f *memRows) Replace(ctx context.Context, table string, entity []byte, ifMatch string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, _ := transform.DecodeEntity(table, entity)
	cur, ok := f.rows[memKey(table, r.PartitionKey, r.RowKey)]
	switch {
	case !ok:
		return "", store.ErrNotFound
	case cur.ETag != ifMatch:
		return "", store.ErrPreconditionFailed
	}
	return f.write(table, entity)
}

func (f *memRows) Delete(ctx context.Context, table string, key store.Key, ifMatch string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := memKey(table, key.PartitionKey, key.RowKey)
	cur, ok := f.rows[k]
	switch {
	case !ok:
		return store.ErrNotFound
	case cur.ETag != ifMatch:
		return store.ErrPreconditionFailed
	}
	delete(f.rows, k)
	return nil
}

func (f *memRows) row(table, pk, rk string) transform.Row {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows[memKey(table, pk, rk)]
}

// memDocs is a DocStore in memory whose docs carry _etag and _ts in their
// JSON, as the service's do. beforeSync, when set, runs once, before the
// first Replace is judged (the application writing meanwhile).
type memDocs struct {
	mu         sync.Mutex
	n          int
	docs       map[string]map[string]any
	beforeSync func(d *memDocs)
	syncs      int
}

func (d *memDocs) set(c string, doc map[string]any) {
	d.n++
	doc["_etag"] = fmt.Sprintf(`"e%d"`, d.n)
	doc["_ts"] = float64(1800000000 + d.n)
	d.docs[memKey(c, doc["scope"].(string), doc["id"].(string))] = doc
}

func (d *memDocs) get(c, scope, id string) map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.docs[memKey(c, scope, id)]
}

func (d *memDocs) Read(ctx context.Context, c, scope, id string) ([]byte, string, bool, float64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	doc, ok := d.docs[memKey(c, scope, id)]
	if !ok {
		return nil, "", false, 1, nil
	}
	b, err := json.Marshal(doc)
	return b, doc["_etag"].(string), true, 1, err
}

func (d *memDocs) Create(context.Context, string, string, string, []byte) (store.WriteResult, error) {
	return store.WriteResult{}, errors.New("reverse never creates a doc")
}

func (d *memDocs) Replace(ctx context.Context, c, scope, id string, raw []byte, ifMatch string) (store.WriteResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncs++
	if f := d.beforeSync; f != nil {
		d.beforeSync = nil
		f(d)
	}
	cur, ok := d.docs[memKey(c, scope, id)]
	switch {
	case !ok:
		return store.WriteResult{}, store.ErrNotFound
	case cur["_etag"] != ifMatch:
		return store.WriteResult{}, store.ErrPreconditionFailed
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return store.WriteResult{}, err
	}
	d.set(c, doc)
	return store.WriteResult{}, nil
}

func (d *memDocs) Delete(context.Context, string, string, string, string) (store.WriteResult, error) {
	return store.WriteResult{}, errors.New("reverse never deletes a doc")
}

// memFeed sends the same docs for entities, nothing for executions.
type memFeed struct{ docs [][]byte }

func (f *memFeed) Changes(ctx context.Context, c, from string, pageSize int, fn func([]byte) error) (string, error) {
	if c != transform.ContainerEntities {
		return from, nil
	}
	for _, d := range f.docs {
		if err := fn(d); err != nil {
			return "", err
		}
	}
	return from, nil
}

type noBlobs struct{}

func (noBlobs) List(context.Context, func(string, int64) error) error { return nil }
func (noBlobs) PutIfAbsent(context.Context, string, []byte, string) (bool, error) {
	return true, nil
}

const (
	revAliceRow = `{"PartitionKey":"GLOBAL","RowKey":"user:alice@contoso.example","Email":"alice@contoso.example","DisplayName":"Alice","UserType":"PLATFORM","IsPlatformAdmin":true,"IsActive":true,"CreatedAt":"2024-01-15T09:00:00"}`
	revAliceID  = "user-alice@contoso.example"
	revAliceRK  = "user:alice@contoso.example"
)

// revSetup migrates alice's row as run does (the doc carries _migration
// with the row's Timestamp) and lets the application rename her in
// Cosmos DB. It returns the tables, the docs and the doc as the change
// feed sends it.
func revSetup(t *testing.T) (*memRows, *memDocs, map[string]any) {
	t.Helper()
	rows := newMemRows()
	rows.mu.Lock()
	_, err := rows.write(transform.TableEntities, []byte(revAliceRow))
	rows.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	o := transform.Transform(rows.row(transform.TableEntities, "GLOBAL", revAliceRK), transform.BlobFacts{}, transform.Options{Now: time.Now()})
	if o.Disposition != transform.DispositionDoc {
		t.Fatalf("alice's row: %+v", o)
	}
	var doc map[string]any
	if err := json.Unmarshal(o.DocJSON, &doc); err != nil {
		t.Fatal(err)
	}
	docs := &memDocs{docs: map[string]map[string]any{}}
	doc["displayName"] = "Alice Renamed"
	docs.set(transform.ContainerEntities, doc)
	return rows, docs, copyDoc(doc)
}

func copyDoc(doc map[string]any) map[string]any {
	c := make(map[string]any, len(doc))
	for k, v := range doc {
		c[k] = v
	}
	return c
}

func rawDoc(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reverseOnce runs Reverse over the docs the feed sends.
func reverseOnce(t *testing.T, rows *memRows, docs *memDocs, opts ReverseOptions, feed ...[]byte) ReverseSummary {
	t.Helper()
	opts.Since = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	s, err := Reverse(context.Background(), opts, ReverseDeps{Changes: &memFeed{feed}, Position: func(time.Time) string { return "" },
		Rows: rows, Docs: docs, Blobs: noBlobs{}, Env: Env{Now: func() time.Time { return time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC) }}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantSynced checks that alice's row says name and that her doc records
// the sync: its hash matches its content (what verify and replay check).
func wantSynced(t *testing.T, rows *memRows, docs *memDocs, name string) {
	t.Helper()
	if got := rows.row(transform.TableEntities, "GLOBAL", revAliceRK).Props["DisplayName"].Str; got != name {
		t.Errorf("the row's DisplayName is %q, want %q", got, name)
	}
	raw, _, _, _, _ := docs.Read(context.Background(), transform.ContainerEntities, "GLOBAL", revAliceID)
	d, err := transform.DecodeDocOrdered(raw)
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := transform.DocMigration(d)
	h, _ := transform.Hash(d)
	if err != nil || !ok || h != m.Hash {
		t.Errorf("the doc does not record the sync: _migration %+v (%v), hash of the doc %s", m, err, h)
	}
	if m.Timestamp != transform.FormatTimestamp(rows.row(transform.TableEntities, "GLOBAL", revAliceRK).Timestamp) {
		t.Errorf("_migration.timestamp %s is not the row's Timestamp", m.Timestamp)
	}
}

// TestReverseOwnWriteIsNoConflict: the application changes the doc again
// between reverse's row write and its sync (412): reverse reads it again,
// and the row it just wrote is no change in the tables: no conflict, the
// row holds the newest version.
func TestReverseOwnWriteIsNoConflict(t *testing.T) {
	rows, docs, doc := revSetup(t)
	docs.beforeSync = func(d *memDocs) {
		cur := d.docs[memKey(transform.ContainerEntities, "GLOBAL", revAliceID)]
		cur["displayName"] = "Alice Renamed Again"
		d.set(transform.ContainerEntities, cur)
	}
	s := reverseOnce(t, rows, docs, ReverseOptions{}, rawDoc(t, doc))
	if s.Totals.Conflicts != 0 || s.Totals.Synced != 1 || s.Totals.StartOvers != 1 {
		t.Errorf("totals %+v, want 1 synced after 1 start-over, no conflict", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed Again")
}

// TestReverseFeedLSN: the change feed adds _lsn to each doc; it is no
// change of the application's, so the hash recorded on the doc matches the
// stored doc, and the tool's own sync record, back in the feed with a new
// _lsn, writes nothing.
func TestReverseFeedLSN(t *testing.T) {
	rows, docs, doc := revSetup(t)
	doc["_lsn"] = 42
	s := reverseOnce(t, rows, docs, ReverseOptions{}, rawDoc(t, doc))
	if s.Totals.Synced != 1 {
		t.Fatalf("totals %+v, want 1 synced", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed")
	again := copyDoc(docs.get(transform.ContainerEntities, "GLOBAL", revAliceID))
	again["_lsn"] = 43
	syncs := docs.syncs
	s = reverseOnce(t, rows, docs, ReverseOptions{}, rawDoc(t, again))
	if s.Totals.Unchanged != 1 || s.Totals.Writes() != 0 || docs.syncs != syncs {
		t.Errorf("the tool's own sync record came back: totals %+v, %d doc writes; want unchanged and nothing written", s.Totals, docs.syncs-syncs)
	}
}

// TestReverseOlderCopyAfterNewer: the change feed sends a doc's newer
// version, then an older one (it changed while the pass ran). The older
// copy must neither be a conflict nor, with --force, leave its content in
// the row while the doc says it is in sync.
func TestReverseOlderCopyAfterNewer(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			rows, docs, v1 := revSetup(t)
			v2 := copyDoc(v1)
			v2["displayName"] = "Alice v2"
			docs.set(transform.ContainerEntities, copyDoc(v2))
			v2 = copyDoc(docs.get(transform.ContainerEntities, "GLOBAL", revAliceID))
			s := reverseOnce(t, rows, docs, ReverseOptions{Common: Common{Concurrency: 1}, WindowOptions: WindowOptions{Force: force}}, rawDoc(t, v2), rawDoc(t, v1))
			if s.Totals.Conflicts != 0 || s.Totals.Forced != 0 {
				t.Errorf("totals %+v, want no conflict", s.Totals)
			}
			wantSynced(t, rows, docs, "Alice v2")
		})
	}
}

// TestReverseSameDocConcurrently: 20 copies of one doc at concurrency 8
// (run with -race): one sync, no conflict, no error.
func TestReverseSameDocConcurrently(t *testing.T) {
	rows, docs, doc := revSetup(t)
	var feed [][]byte
	for range 20 {
		feed = append(feed, rawDoc(t, doc))
	}
	s := reverseOnce(t, rows, docs, ReverseOptions{Common: Common{Concurrency: 8}}, feed...)
	if s.Totals.Conflicts != 0 || s.Totals.Synced != 1 || s.Totals.Unchanged != 19 || s.Totals.RowsWritten != 1 {
		t.Errorf("totals %+v, want 1 synced (1 row written) and 19 unchanged", s.Totals)
	}
	wantSynced(t, rows, docs, "Alice Renamed")
}

// TestReverseRefusedRowIsADeadLetter: a row the Table service refuses for
// good (400) makes its doc a dead letter, named in the file with the doc;
// the reverse goes on and the doc records no sync.
func TestReverseRefusedRowIsADeadLetter(t *testing.T) {
	rows, docs, doc := revSetup(t)
	rows.refuse = func(table, rowKey string) bool { return rowKey == revAliceRK }
	dir := t.TempDir()
	s := reverseOnce(t, rows, docs, ReverseOptions{Common: Common{StateDir: dir}}, rawDoc(t, doc))
	if s.Totals.DeadLetters != 1 || s.Totals.Synced != 0 {
		t.Fatalf("totals %+v, want 1 dead letter", s.Totals)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReverseDeadLetterFile))
	if err != nil {
		t.Fatal(err)
	}
	var dl DeadLetter
	if err := json.Unmarshal(b, &dl); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	want := "replace Entities GLOBAL/user:alice@contoso.example: Table Storage refused the row: 400 PropertyValueTooLarge"
	if dl.Reason != want || dl.Table != "Entities" || dl.RowKey != revAliceRK ||
		dl.Doc == nil || *dl.Doc != (DeadLetterDoc{Container: "entities", Scope: "GLOBAL", ID: revAliceID}) {
		t.Errorf("dead letter %s, want reason %q and the doc named", b, want)
	}
	if strings.Contains(string(b), "Alice Renamed") {
		t.Errorf("the dead letter carries property values: %s", b)
	}
	if got := docs.get(transform.ContainerEntities, "GLOBAL", revAliceID)["_etag"]; got != doc["_etag"] {
		t.Error("the doc was written although its row was refused")
	}
}
