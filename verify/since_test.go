package verify

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// sinceWorld is a migrated world, fully verified at start with its
// DocsFile in dir, whose clock then moves on.
type sinceWorld struct {
	*testWorld
	start time.Time
	dir   string
	clock time.Time
	// execs are executions whose docs name no blob.
	execs []DocRef
	// queries counts the queries verify sends, by their text.
	queries *queryCounter
}

// queryCounter is a DocSource that counts the queries it passes on.
type queryCounter struct {
	DocSource
	mu sync.Mutex
	n  map[string]int
}

func (q *queryCounter) QueryAll(ctx context.Context, container, query string, params []store.QueryParam, pageSize int, fn func(doc []byte) error) error {
	q.mu.Lock()
	q.n[query]++
	q.mu.Unlock()
	return q.DocSource.QueryAll(ctx, container, query, params, pageSize, fn)
}

// take returns the counts so far and starts again from zero.
func (q *queryCounter) take() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.n
	q.n = map[string]int{}
	return n
}

func newSinceWorld(t *testing.T, n int) *sinceWorld {
	t.Helper()
	w := &sinceWorld{testWorld: newTestWorld(t, n), start: worldNow, dir: t.TempDir()}
	w.queries = &queryCounter{DocSource: w.docs.Reader(), n: map[string]int{}}
	w.clock = w.start.Add(-time.Hour)
	w.docs.Now = func() time.Time { return w.clock }
	for _, ref := range w.placed {
		if ref.Container == transform.ContainerExecutions {
			if d := w.doc(t, ref); d["resultBlobPath"] == nil && d["logsBlobPath"] == nil {
				w.execs = append(w.execs, ref)
			}
		}
	}
	r := w.verify(t, time.Time{}, false)
	if !r.OK && r.Totals.Missing+r.Totals.Different+r.Totals.Orphans > 0 || !r.docsWritten {
		t.Fatalf("the full verify: %s (docs file %v)", r.VerdictLine(), r.docsWritten)
	}
	w.clock = w.start.Add(time.Minute)
	return w
}

// verify runs a full verify (since zero) or a --since, on the full
// verify when base is set, at the world's clock.
func (w *sinceWorld) verify(t *testing.T, since time.Time, base bool) *Report {
	t.Helper()
	v := &Verifier{Rows: w.tables, Docs: w.queries, Blobs: w.blobs, Changes: w.docs.Reader(), Position: w.docs.Reader().Since,
		Now: func() time.Time { return w.clock }}
	opts := Options{Transform: w.opts, Since: since, sizes: tiny, PageSize: 7}
	if since.IsZero() {
		opts.DocsDir = w.dir
		opts.Started = w.start
	}
	if base {
		opts.Base = &Base{Started: w.start, DocsFile: filepath.Join(w.dir, DocsFile)}
	}
	r, err := v.Run(context.Background(), opts)
	must(t, err)
	return r
}

// row returns the row ref names.
func (w *sinceWorld) row(t *testing.T, ref DocRef) transform.Row {
	t.Helper()
	r, ok := w.tables.Row(ref.Table, ref.PartitionKey, ref.RowKey)
	if !ok {
		t.Fatalf("no row %s", ref)
	}
	r.Table = ref.Table
	return r
}

// write stores row as the application would, at the clock.
func (w *sinceWorld) write(row transform.Row) {
	row.Timestamp = w.clock
	w.tables.Add(row.Table, row)
}

// replay writes row's doc as replay would.
func (w *sinceWorld) replay(t *testing.T, row transform.Row) {
	t.Helper()
	row, _ = w.tables.Row(row.Table, row.PartitionKey, row.RowKey)
	o := transform.Transform(row, transform.BlobFacts{}, w.opts)
	if o.Disposition != transform.DispositionDoc {
		t.Fatalf("row %s/%s: %s", row.PartitionKey, row.RowKey, o.Disposition)
	}
	w.docs.Put(o.Container, o.DocJSON)
}

func ids(refs []DocRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

// After a clean full verify the application changes rows and docs: an
// edit, a new row, a deleted doc, a tampered doc. verify --since the full
// verify's start reports exactly those — the edit and the tampered doc
// different, the new row's doc and the deleted doc missing — and nothing
// else, with every sorter on disk; once a replay has applied the edit and
// the new row, the tampered doc is rewritten from its row and the deleted
// one written again, it says the whole is in sync. Without the full
// verify it says what it covers, and claims no more.
func TestSinceAfterFullVerify(t *testing.T) {
	w := newSinceWorld(t, 40)
	edited := w.row(t, w.execs[0])
	edited.Props["Status"] = transform.String("Cancelled")
	w.write(edited)
	newRow := w.row(t, w.execs[1])
	newRow.RowKey = newRow.RowKey + "-new"
	newRow.Props["ExecutionId"] = transform.String(w.execs[1].ID + "-new")
	w.write(newRow)
	w.del(t, w.execs[2])
	tampered := w.doc(t, w.execs[3])
	tampered["status"] = "Tampered"
	w.put(t, transform.ContainerExecutions, tampered)
	w.clock = w.clock.Add(time.Minute)

	r := w.verify(t, w.start, true)
	if got, want := ids(r.Missing), []string{w.execs[1].ID + "-new", w.execs[2].ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
	var different []string
	for _, d := range r.Differences {
		if !slices.Contains(different, d.Doc.ID) {
			different = append(different, d.Doc.ID)
		}
	}
	slices.Sort(different)
	if want := ids([]DocRef{w.execs[0], w.execs[3]}); !reflect.DeepEqual(different, want) {
		t.Errorf("different %q, want %q:\n%s", different, want, fakes.JSON(r.Differences))
	}
	if tot := r.Totals; tot.Missing != 2 || tot.Different != 2 || tot.Orphans != 0 || r.NotMigrated != 0 || total(r.AppWritten) != 0 || tot.ChangedWhileRunning != 0 {
		t.Errorf("totals %s, app-written %v, not migrated %d; want 2 missing, 2 different, nothing else", fakes.JSON(tot), r.AppWritten, r.NotMigrated)
	}
	if r.OK || r.Partial || !r.Scope.Base.Equal(w.start) || !r.Scope.Since.Equal(w.start) {
		t.Errorf("ok %v, partial %v, scope %s", r.OK, r.Partial, fakes.JSON(r.Scope))
	}
	if want := "verify: 2 missing, 2 different, 0 orphan doc(s) in the full verify of 2026-11-21T12:00:00Z plus every change since 2026-11-21T12:00:00Z: "; !strings.HasPrefix(r.VerdictLine(), want) {
		t.Errorf("verdict %q, want it to start with %q", r.VerdictLine(), want)
	}

	// A replay applies the two legitimate changes; the tampered doc is
	// written again from its row, and so is the deleted one.
	w.clock = w.clock.Add(time.Minute)
	w.replay(t, edited)
	w.replay(t, newRow)
	w.replay(t, w.row(t, w.execs[3]))
	w.replay(t, w.row(t, w.execs[2]))
	w.clock = w.clock.Add(time.Minute)
	r = w.verify(t, w.start, true)
	if !r.OK || r.Partial || r.Totals.Matched == 0 {
		t.Fatalf("after the replay: %s\n%s", r.VerdictLine(), fakes.JSON(r.Totals))
	}
	if want := "verify: OK — in sync: the full verify of 2026-11-21T12:00:00Z plus every change since 2026-11-21T12:00:00Z: "; !strings.HasPrefix(r.VerdictLine(), want) {
		t.Errorf("verdict %q, want it to start with %q", r.VerdictLine(), want)
	}

	// Without the full verify: what it covers, partial.
	r = w.verify(t, w.start, false)
	if !r.OK || !r.Partial || !r.Scope.Base.IsZero() || !strings.HasPrefix(r.VerdictLine(), "verify: OK for changes since 2026-11-21T12:00:00Z: ") {
		t.Errorf("without a full verify: ok %v partial %v, %q", r.OK, r.Partial, r.VerdictLine())
	}
}

// The other rules of --since, each a change of the application after the
// full verify: a changed row whose doc's place holds the doc of an
// unchanged row that comes first is a dead letter, as run would make it
// (a collision across the two sets); a doc written naming a row that does
// not exist is an orphan; a doc the application wrote without _migration
// where an unchanged row's doc belongs is judged (different); one
// written elsewhere is the application's own; a doc moved to another
// place, its row's place left empty, is different (found elsewhere).
func TestSinceRules(t *testing.T) {
	w := newSinceWorld(t, 40)
	// A collision: a new row of a later partition makes the doc the
	// first execution's row already makes.
	first := w.row(t, w.execs[0])
	twin := first
	twin.Props = maps.Clone(first.Props)
	twin.PartitionKey = "org-" + first.PartitionKey
	if before(DocRef{Table: twin.Table, PartitionKey: twin.PartitionKey, RowKey: twin.RowKey}, w.execs[0]) {
		t.Fatalf("the twin's partition %s does not come after %s", twin.PartitionKey, first.PartitionKey)
	}
	w.write(twin)
	// An orphan: a doc naming a row that does not exist.
	orphan := w.doc(t, w.execs[1])
	orphan["id"] = w.execs[1].ID + "-orphan"
	orphan["_migration"].(map[string]any)["rowKey"] = "execution:none"
	w.put(t, w.execs[1].Container, orphan)
	// The application's doc where a row's doc belongs, and elsewhere.
	app := w.doc(t, w.execs[2])
	delete(app, "_migration")
	app["status"] = "Running"
	w.put(t, w.execs[2].Container, app)
	elsewhere := w.doc(t, w.execs[3])
	delete(elsewhere, "_migration")
	elsewhere["id"] = "note-1"
	w.put(t, w.execs[3].Container, elsewhere)
	// A doc moved away from its row's place.
	moved := w.doc(t, w.execs[4])
	w.del(t, w.execs[4])
	moved["id"] = w.execs[4].ID + "-moved"
	w.put(t, w.execs[4].Container, moved)
	w.clock = w.clock.Add(time.Minute)

	r := w.verify(t, w.start, true)
	if r.NotMigrated != 1 || len(r.DeadLetters) != 1 || r.DeadLetters[0].PartitionKey != twin.PartitionKey ||
		!strings.Contains(r.DeadLetters[0].Reason, "id collision") {
		t.Errorf("not migrated %d, dead letters %s; want the twin, a collision", r.NotMigrated, fakes.JSON(r.DeadLetters))
	}
	if len(r.Orphans) != 1 || r.Orphans[0].ID != w.execs[1].ID+"-orphan" || r.Orphans[0].Reason != "its row no longer exists" {
		t.Errorf("orphans %s", fakes.JSON(r.Orphans))
	}
	var moves, appDiffs int
	for _, d := range r.Differences {
		switch {
		case d.ActualDoc != nil && d.Doc.ID == w.execs[4].ID && d.ActualDoc.ID == w.execs[4].ID+"-moved":
			moves++
		case d.Doc.ID == w.execs[2].ID:
			appDiffs++
		}
	}
	if moves == 0 || appDiffs == 0 || r.Totals.Different != 2 {
		t.Errorf("different %d (moved %d, the application's %d): %s", r.Totals.Different, moves, appDiffs, fakes.JSON(r.Differences))
	}
	if r.AppWritten[transform.ContainerExecutions] != 1 || r.Totals.Missing != 0 {
		t.Errorf("application-written %v, missing %d", r.AppWritten, r.Totals.Missing)
	}
}

// The counts that find deleted docs: each container's docs are counted
// in one query, and its scopes only when that count is not what the full
// verify's docs and the changes explain (or the service will not count a
// container at once, as the gateway of an account of several physical
// partitions will not); the deletions are found either way, also beside
// a doc the application created in the same scope or another (the
// change feed has it: the count it balances is not the one expected),
// and nothing is reported where nothing was deleted.
func TestSinceCountsScopesOnlyWhenTheContainerFallsShort(t *testing.T) {
	const scopesOf = "SELECT VALUE COUNT(1) FROM c WHERE c.scope = @scope"
	for _, refuse := range []bool{false, true} {
		for _, tc := range []struct {
			name    string
			deleted int // executions whose doc the application deletes
			created string
		}{
			{name: "nothing deleted"},
			{name: "a doc deleted", deleted: 1},
			{name: "a doc deleted, another created in its scope", deleted: 1, created: "same"},
			{name: "a doc deleted, another created in another scope", deleted: 1, created: "other"},
			{name: "two docs deleted", deleted: 2},
		} {
			t.Run(fmt.Sprintf("%s, container counts refused %v", tc.name, refuse), func(t *testing.T) {
				w := newSinceWorld(t, 40)
				w.docs.RefuseContainerCounts = refuse
				var want []string
				for _, ref := range w.execs[:tc.deleted] {
					w.del(t, ref)
					want = append(want, ref.ID)
				}
				if tc.created != "" {
					app := w.doc(t, w.execs[5])
					delete(app, "_migration")
					app["id"] = "app-note"
					if tc.created == "same" {
						app["scope"] = w.execs[0].Scope
					} else if app["scope"] = "org-elsewhere"; w.execs[0].Scope == "org-elsewhere" {
						t.Fatal("the other scope is the deleted doc's")
					}
					w.put(t, transform.ContainerExecutions, app)
				}
				w.clock = w.clock.Add(time.Minute)
				w.queries.take()
				r := w.verify(t, w.start, true)
				slices.Sort(want)
				if got := ids(r.Missing); !slices.Equal(got, want) || r.Totals.Different+r.Totals.Orphans != 0 {
					t.Errorf("missing %q, want %q; totals %s", got, want, fakes.JSON(r.Totals))
				}
				if appWritten := total(r.AppWritten); (tc.created != "") != (appWritten == 1) {
					t.Errorf("application-written %v", r.AppWritten)
				}
				q := w.queries.take()
				switch {
				case refuse && q[scopesOf] == 0:
					t.Errorf("the containers' counts refused, and no scope counted: %v", q)
				case !refuse && tc.deleted == 0 && tc.created == "" && q[scopesOf] != 0:
					t.Errorf("nothing deleted, and scopes counted all the same: %v", q)
				case !refuse && q["SELECT VALUE COUNT(1) FROM c"] != 2:
					t.Errorf("the containers counted %d times, want 2 (entities, executions): %v", q["SELECT VALUE COUNT(1) FROM c"], q)
				}
			})
		}
	}
}

// configAfterEntities is a RowSource that holds every read of Config
// until a read of Entities has started: a verify that reads the tables
// one after the other never gets past Config.
type configAfterEntities struct {
	RowSource
	once     sync.Once
	entities chan struct{}
}

func (s *configAfterEntities) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	switch table {
	case transform.TableEntities:
		s.once.Do(func() { close(s.entities) })
	case transform.TableConfig:
		select {
		case <-s.entities:
		case <-ctx.Done():
			return store.Page{}, fmt.Errorf("a read of Config waited for one of Entities: %w", ctx.Err())
		}
	}
	return s.RowSource.ReadPage(ctx, table, q, from)
}

// verify reads the tables as a pass does, all at once (a --since then
// takes about the time of the slowest range of them all, not the sum of
// each table's): a full verify and a --since whose reads of Config wait
// for one of Entities end, with their verdicts.
func TestVerifyReadsTheTablesAtOnce(t *testing.T) {
	w := newSinceWorld(t, 40)
	edited := w.row(t, w.execs[0])
	edited.Props["Status"] = transform.String("Cancelled")
	w.write(edited)
	w.clock = w.clock.Add(time.Minute)
	for _, since := range []time.Time{{}, w.start} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang bound, not a timing
		v := &Verifier{Rows: &configAfterEntities{RowSource: w.tables, entities: make(chan struct{})}, Docs: w.queries, Blobs: w.blobs,
			Changes: w.docs.Reader(), Position: w.docs.Reader().Since, Now: func() time.Time { return w.clock }}
		opts := Options{Transform: w.opts, Since: since, sizes: tiny, PageSize: 7}
		if !since.IsZero() {
			opts.Base = &Base{Started: w.start, DocsFile: filepath.Join(w.dir, DocsFile)}
		}
		r, err := v.Run(ctx, opts)
		cancel()
		if err != nil {
			t.Fatalf("verify since %v: %v", since, err)
		}
		if ids := ids(diffDocs(r)); r.Totals.Different != 1 || !slices.Equal(ids, []string{w.execs[0].ID}) || r.Totals.Missing+r.Totals.Orphans != 0 {
			t.Errorf("verify since %v: %s, different %q; want the edited execution %s alone", since, r.VerdictLine(), ids, w.execs[0].ID)
		}
	}
}

// diffDocs lists the docs r finds different, once each.
func diffDocs(r *Report) []DocRef {
	var out []DocRef
	for _, d := range r.Differences {
		if !slices.ContainsFunc(out, func(o DocRef) bool { return o.ID == d.Doc.ID }) {
			out = append(out, d.Doc)
		}
	}
	return out
}

// stepsSeen is a Progress that records its steps and closes when once
// one ends with suffix.
type stepsSeen struct {
	mu     sync.Mutex
	steps  []string
	suffix string
	once   sync.Once
	when   chan struct{}
}

func (p *stepsSeen) Step(msg string) {
	p.mu.Lock()
	p.steps = append(p.steps, msg)
	p.mu.Unlock()
	if strings.HasSuffix(msg, p.suffix) {
		p.once.Do(func() { close(p.when) })
	}
}

// feedAfter is a ChangeSource that reads nothing until when is closed.
type feedAfter struct {
	ChangeSource
	when chan struct{}
}

func (f feedAfter) Changes(ctx context.Context, container, from string, pageSize int, fn func(doc []byte) error) (string, error) {
	select {
	case <-f.when:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return f.ChangeSource.Changes(ctx, container, from, pageSize, fn)
}

// When the tables' changes are read before the change feed's, the
// progress says the change feed is still being read, not the last table
// (a slow feed once looked like a slow table).
func TestSinceProgressNamesTheFeedWhileItIsRead(t *testing.T) {
	w := newSinceWorld(t, 10)
	p := &stepsSeen{suffix: " (the tables' changes are read)", when: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang bound, not a timing
	defer cancel()
	v := &Verifier{Rows: w.tables, Docs: w.queries, Blobs: w.blobs, Changes: feedAfter{ChangeSource: w.docs.Reader(), when: p.when},
		Position: w.docs.Reader().Since, Now: func() time.Time { return w.clock }, Progress: p}
	r, err := v.Run(ctx, Options{Transform: w.opts, Since: w.start, sizes: tiny, PageSize: 7,
		Base: &Base{Started: w.start, DocsFile: filepath.Join(w.dir, DocsFile)}})
	if err != nil {
		t.Fatalf("verify --since: %v; steps %q", err, p.steps)
	}
	want := "reading the changes of containers entities, executions since 2026-11-21T12:00:00Z (the tables' changes are read)"
	if !slices.Contains(p.steps, want) || !r.OK {
		t.Errorf("steps %q, want %q among them; %s", p.steps, want, r.VerdictLine())
	}
}

// TestFullVerifyLearnsTheRanges: a full verify writes where each table
// splits into ranges of rangeRows rows (store.RangesFile), and a --since
// given those ranges reads every one of them, with the same verdict.
func TestFullVerifyLearnsTheRanges(t *testing.T) {
	w := newSinceWorld(t, 40)
	dir := t.TempDir()
	v := &Verifier{Rows: w.tables, Docs: w.queries, Blobs: w.blobs, Changes: w.docs.Reader(), Position: w.docs.Reader().Since,
		Now: func() time.Time { return w.clock }}
	r, err := v.Run(context.Background(), Options{Transform: w.opts, sizes: tiny, PageSize: 7, DocsDir: dir, Started: w.start, rangeRows: 7})
	must(t, err)
	if r.Totals.Missing+r.Totals.Different+r.Totals.Orphans > 0 {
		t.Fatalf("the full verify: %s", r.VerdictLine())
	}
	ranges, err := store.LoadRanges(dir)
	must(t, err)
	for _, table := range transform.Tables() {
		rows := w.tables.Rows(table)
		var want []store.Key
		for i := 7; i < len(rows); i += 7 {
			want = append(want, store.Key{PartitionKey: rows[i].PartitionKey, RowKey: rows[i].RowKey})
		}
		if !slices.Equal(ranges[table], want) {
			t.Errorf("%s (%d rows) splits at %v, want %v", table, len(rows), ranges[table], want)
		}
	}
	edited := w.row(t, w.execs[0])
	edited.Props["Status"] = transform.String("Cancelled")
	w.write(edited)
	w.clock = w.clock.Add(time.Minute)
	froms := &rangeStarts{RowSource: w.tables, seen: map[store.Key]bool{}}
	v.Rows = froms
	r, err = v.Run(context.Background(), Options{Transform: w.opts, Since: w.start, sizes: tiny, PageSize: 7, Ranges: ranges,
		Base: &Base{Started: w.start, DocsFile: filepath.Join(w.dir, DocsFile)}})
	must(t, err)
	if ids := ids(diffDocs(r)); r.Totals.Different != 1 || !slices.Equal(ids, []string{w.execs[0].ID}) || r.Totals.Missing+r.Totals.Orphans != 0 {
		t.Errorf("verify --since on the learned ranges: %s, different %q; want the edited execution %s alone", r.VerdictLine(), ids, w.execs[0].ID)
	}
	for table, keys := range ranges {
		for _, k := range keys {
			if !froms.seen[k] {
				t.Errorf("%s: no range read from the learned split %s/%s", table, k.PartitionKey, k.RowKey)
			}
		}
	}
}

// rangeStarts is a RowSource that records where each range read starts.
type rangeStarts struct {
	RowSource
	mu   sync.Mutex
	seen map[store.Key]bool
}

func (s *rangeStarts) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	if q.From != nil {
		s.mu.Lock()
		s.seen[*q.From] = true
		s.mu.Unlock()
	}
	return s.RowSource.ReadPage(ctx, table, q, from)
}
