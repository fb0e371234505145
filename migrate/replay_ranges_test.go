package migrate

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// A pass reads every key range of every table at once (store.ScanSpans).
// These tests hold it to what one scan of each table gives: the same rows
// applied with the same outcomes, the read-order id rule included, and
// nothing missed by a pass interrupted or by the next pass.

// rangesWorld is a deployment where rows changed in every key range of
// Entities and Relationships since migratedAt, with executions that share
// an id across ranges (an organization's partition and "org-" + its id,
// one scope: SPEC §10, the first in key order owns the id).
type rangesWorld struct {
	before, after []transform.Row
	blobs         []fixtures.Blob
	edited        rowRef // a changed row whose doc the application edited
	// picked are the rows set up on purpose: the executions that share
	// an id and a new one; their docs end as a fresh run leaves them.
	picked []rowRef
}

type rowRef struct{ table, pk, rk string }

func newRangesWorld(t *testing.T) rangesWorld {
	t.Helper()
	var w rangesWorld
	var execs []transform.Row
	err := fixtures.Generate(fixtures.GenerateOptions{N: 400, Seed: 7, Base: migratedAt}, func(it fixtures.Item) error {
		if it.Table == "" {
			w.blobs = append(w.blobs, it.Blob)
			return nil
		}
		row := it.Row
		row.Table, row.Timestamp = it.Table, migratedAt
		if it.Table == transform.TableEntities {
			execs = append(execs, row)
		}
		w.before = append(w.before, row)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := func(row transform.Row, status string) transform.Row {
		row.Props = cloneProps(row.Props)
		row.Props["Status"] = transform.String(status)
		row.Timestamp = changedAt
		return row
	}
	moved := func(row transform.Row) transform.Row { // the same execution in "org-" + its organization's partition
		row.Props = cloneProps(row.Props)
		row.PartitionKey = "org-" + row.PartitionKey
		return row
	}
	var pairs []transform.Row // executions of a UUID partition, to share ids with
	for _, row := range execs {
		if row.PartitionKey != "GLOBAL" && len(pairs) < 8 {
			pairs = append(pairs, row)
		}
	}
	for i, row := range pairs {
		ref := func(r transform.Row) rowRef { return rowRef{r.Table, r.PartitionKey, r.RowKey} }
		w.picked = append(w.picked, ref(row), ref(moved(row)))
		switch i % 4 {
		case 0: // both rows change: the first owns the id, the later is a dead letter
			w.before = append(w.before, moved(row))
			w.after = append(w.after, changed(row, "Failed"), changed(moved(row), "Cancelled"))
		case 1: // only the later row changes: a collision with the owner's doc
			w.before = append(w.before, moved(row))
			w.after = append(w.after, changed(moved(row), "Cancelled"))
		case 2: // the first appears during the rollback: it takes the doc over
			w.before = slices.DeleteFunc(w.before, func(r transform.Row) bool {
				return r.Table == row.Table && r.PartitionKey == row.PartitionKey && r.RowKey == row.RowKey
			})
			w.before = append(w.before, moved(row))
			w.after = append(w.after, changed(row, "Failed"))
		case 3: // the later row appears during the rollback
			w.after = append(w.after, changed(moved(row), "Cancelled"))
		}
	}
	// A new execution, written during the rollback.
	created := execs[len(execs)-1]
	w.before = slices.DeleteFunc(w.before, func(r transform.Row) bool {
		return r.Table == created.Table && r.PartitionKey == created.PartitionKey && r.RowKey == created.RowKey
	})
	w.after = append(w.after, changed(created, "Running"))
	w.picked = append(w.picked, rowRef{created.Table, created.PartitionKey, created.RowKey})
	for i, row := range w.before {
		switch {
		case row.Table == transform.TableEntities && i%7 == 3 && !isPicked(w.picked, row):
			w.after = append(w.after, changed(row, "Failed"))
		case row.Table == transform.TableRelationships && i%11 == 5:
			row.Timestamp = changedAt
			w.after = append(w.after, row)
		}
	}
	for _, row := range w.after {
		if row.Table == transform.TableEntities && !isPicked(w.picked, row) {
			w.edited = rowRef{row.Table, row.PartitionKey, row.RowKey}
			break
		}
	}
	return w
}

func isPicked(picked []rowRef, row transform.Row) bool {
	return slices.Contains(picked, rowRef{row.Table, row.PartitionKey, row.RowKey})
}

func cloneProps(p map[string]transform.Value) map[string]transform.Value {
	out := make(map[string]transform.Value, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// rangesFixture is the world migrated by a run, then changed: the
// application's row changes, and a doc it edited.
type rangesFixture struct {
	src   *fakes.Tables
	docs  *fakes.Docs
	blobs *fakes.Blobs
	dir   string
}

var rangesTransform = transform.Options{ExecutionTTL: transform.TTLFull}

func newRangesFixture(t *testing.T, w rangesWorld, pageSize int) *rangesFixture {
	t.Helper()
	ctx := context.Background()
	f := &rangesFixture{src: fakes.NewTables(fixtures.Tables()...), docs: fakes.NewDocs(), blobs: fakes.NewBlobs(), dir: filepath.Join(t.TempDir(), "state")}
	for _, b := range w.blobs {
		if err := f.blobs.Upload(ctx, b.Path, b.Data); err != nil {
			t.Fatal(err)
		}
	}
	for _, row := range w.before {
		f.src.Add(row.Table, row)
	}
	env := Env{Now: func() time.Time { return goldenNow }}
	runOpts := RunOptions{Common: Common{StateDir: filepath.Join(t.TempDir(), "run"), Concurrency: 4, Transform: rangesTransform}}
	if _, err := Run(ctx, runOpts, Deps{Source: f.src, Docs: f.docs, Blobs: f.blobs, Env: env}); err != nil {
		t.Fatal(err)
	}
	for _, row := range w.after {
		f.src.Add(row.Table, row)
	}
	row, _ := f.src.Row(w.edited.table, w.edited.pk, w.edited.rk)
	o := transform.Transform(row, transform.BlobFacts{}, transform.Options{ExecutionTTL: transform.TTLFull, Now: goldenNow})
	raw, ok := f.docs.Doc(o.Container, o.Scope, o.ID)
	if !ok {
		t.Fatalf("no doc %s/%s/%s to edit", o.Container, o.Scope, o.ID)
	}
	f.docs.Put(o.Container, edit(t, raw, func(m map[string]any) { m["workflowName"] = "renamed by the application" }))
	f.src.PageSize = pageSize
	return f
}

// replay replays the changes since changedAt from src (the fixture's
// tables, or a decorator of them).
func (f *rangesFixture) replay(ctx context.Context, src RowSource) (ReplaySummary, error) {
	opts := ReplayOptions{Common: Common{StateDir: f.dir, Concurrency: 3, Transform: rangesTransform}, WindowOptions: WindowOptions{Since: changedAt}}
	return Replay(ctx, opts, ReplayDeps{Source: src, Docs: f.docs, Blobs: f.blobs, Env: Env{Now: func() time.Time { return goldenNow }}})
}

// oneScan is what a pass over w's changes leaves when it reads each
// table in one request: what a pass in ranges must leave.
func oneScan(t *testing.T, w rangesWorld) outcome {
	t.Helper()
	one := newRangesFixture(t, w, 0)
	s, err := one.replay(context.Background(), one.src)
	if err != nil {
		t.Fatal(err)
	}
	return one.outcome(t, s)
}

// outcome is what a replay left: its counts and conflicts, its dead
// letters (sorted: they are written as the docs are applied) and every
// doc without Cosmos DB's system properties.
type outcome struct {
	totals      ReplayCounts
	tables      []ReplayTableSummary
	conflicts   []Conflict
	deadLetters []string
	docs        map[string]string
}

func (f *rangesFixture) outcome(t *testing.T, s ReplaySummary) outcome {
	t.Helper()
	o := outcome{totals: s.Totals, tables: s.Tables, conflicts: s.Conflicts, docs: map[string]string{}}
	raw, err := os.ReadFile(filepath.Join(f.dir, ReplayDeadLetterFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	o.deadLetters = strings.Split(strings.TrimSpace(string(raw)), "\n")
	slices.Sort(o.deadLetters)
	for k, doc := range f.docs.Snapshot() {
		o.docs[k] = withoutSystem(t, doc)
	}
	return o
}

// compare reports every way got differs from want.
func (o outcome) compare(t *testing.T, what string, want outcome) {
	t.Helper()
	if !reflect.DeepEqual(o.totals, want.totals) {
		t.Errorf("%s: totals %+v, want %+v", what, o.totals, want.totals)
	}
	if !reflect.DeepEqual(o.tables, want.tables) {
		t.Errorf("%s: counts by table and kind %+v, want %+v", what, o.tables, want.tables)
	}
	if !reflect.DeepEqual(o.conflicts, want.conflicts) {
		t.Errorf("%s: conflicts %+v, want %+v", what, o.conflicts, want.conflicts)
	}
	if !slices.Equal(o.deadLetters, want.deadLetters) {
		t.Errorf("%s: dead letters\n%s\nwant\n%s", what, strings.Join(o.deadLetters, "\n"), strings.Join(want.deadLetters, "\n"))
	}
	for k, doc := range want.docs {
		if o.docs[k] != doc {
			t.Errorf("%s: doc %s\n%s\nwant\n%s", what, k, o.docs[k], doc)
		}
	}
	if len(o.docs) != len(want.docs) {
		t.Errorf("%s: %d docs, want %d", what, len(o.docs), len(want.docs))
	}
}

// jitter reads through the fake tables, each read delayed at random so
// that the ranges' reads end in any order; it counts the requests, those
// of a key range, and the most in flight at once.
type jitter struct {
	*fakes.Tables
	mu                          sync.Mutex
	rng                         *rand.Rand
	reads, ranged, active, most int
	// before, when set, runs before each read, one read at a time;
	// after, when set, after each read that succeeded.
	before func(table string, q store.Query)
	after  func(table string, q store.Query, p store.Page)
}

func newJitter(src *fakes.Tables, seed uint64) *jitter {
	return &jitter{Tables: src, rng: rand.New(rand.NewPCG(seed, 2))}
}

func (j *jitter) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	j.mu.Lock()
	j.reads++
	if q.From != nil || q.To != nil {
		j.ranged++
	}
	j.active++
	j.most = max(j.most, j.active)
	d := time.Duration(j.rng.IntN(400)) * time.Microsecond
	if j.before != nil {
		j.before(table, q)
	}
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		j.active--
		j.mu.Unlock()
	}()
	time.Sleep(d)
	p, err := j.Tables.ReadPage(ctx, table, q, from)
	if j.after != nil && err == nil {
		j.after(table, q, p)
	}
	return p, err
}

// TestReplayPassInRangesMatchesOneScan: a pass that reads the changes in
// key ranges at once, two rows a page, its reads ending in any order,
// applies exactly the rows one scan of each table gives (the tables read
// in one request each), with the same outcomes: the same counts, the
// same conflicts and dead letters, the same docs — the executions that
// share an id across ranges end as a fresh run of the tables leaves
// them. A second pass writes nothing.
func TestReplayPassInRangesMatchesOneScan(t *testing.T) {
	w := newRangesWorld(t)
	one := newRangesFixture(t, w, 0)
	oneSrc := newJitter(one.src, 0)
	s, err := one.replay(context.Background(), oneSrc)
	if err != nil {
		t.Fatal(err)
	}
	if oneSrc.reads != len(transform.Tables()) {
		t.Fatalf("the reference read %d pages, want one request per table", oneSrc.reads)
	}
	want := one.outcome(t, s)
	if want.totals.Replaced == 0 || want.totals.Created == 0 || want.totals.Conflicts != 1 || want.totals.DeadLetters < 4 || want.totals.DroppedIndex == 0 {
		t.Fatalf("the world does not test what it should: %+v", want.totals)
	}
	for seed := range uint64(4) {
		f := newRangesFixture(t, w, 2)
		src := newJitter(f.src, seed)
		s, err := f.replay(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if src.ranged == 0 || src.most < 4 {
			t.Fatalf("seed %d: %d reads of key ranges, at most %d at once: the pass was not read in ranges at once", seed, src.ranged, src.most)
		}
		f.outcome(t, s).compare(t, "in ranges", want)
		again, err := f.replay(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if again.Totals.Writes() != 0 {
			t.Errorf("seed %d: a second pass wrote %d docs, want none", seed, again.Totals.Writes())
		}
	}
	// The rows set up on purpose end as a fresh run leaves them.
	fresh := fakes.NewDocs()
	env := Env{Now: func() time.Time { return goldenNow }}
	runOpts := RunOptions{Common: Common{StateDir: filepath.Join(t.TempDir(), "fresh"), Concurrency: 4, Transform: rangesTransform}}
	if _, err := Run(context.Background(), runOpts, Deps{Source: one.src, Docs: fresh, Blobs: one.blobs, Env: env}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range w.picked {
		row, ok := one.src.Row(ref.table, ref.pk, ref.rk)
		if !ok {
			continue
		}
		o := transform.Transform(row, transform.BlobFacts{}, transform.Options{ExecutionTTL: transform.TTLFull, Now: goldenNow})
		got, _ := one.docs.Doc(o.Container, o.Scope, o.ID)
		run, _ := fresh.Doc(o.Container, o.Scope, o.ID)
		if g, r := withoutSystem(t, got), withoutSystem(t, run); g != r {
			t.Errorf("doc of %s/%s after replay\n%s\nafter a fresh run\n%s", ref.pk, ref.rk, g, r)
		}
	}
}

// TestReplayPassInRangesMissesNothing: a pass interrupted while it reads
// its ranges, run again, ends as one uninterrupted pass does.
func TestReplayPassInRangesMissesNothing(t *testing.T) {
	w := newRangesWorld(t)
	want := oneScan(t, w)
	for _, stopAt := range []int{3, 20, 60} {
		f := newRangesFixture(t, w, 2)
		src := newJitter(f.src, uint64(stopAt))
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		src.before = func(string, store.Query) {
			if n++; n == stopAt {
				cancel()
			}
		}
		if _, err := f.replay(ctx, src); err == nil {
			t.Fatalf("stopped at read %d: the pass ended without error", stopAt)
		}
		cancel()
		src.before = nil
		s, err := f.replay(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		got := f.outcome(t, s)
		// What the first pass wrote, the second finds done: their counts
		// differ, what they leave does not.
		got.totals, got.tables = want.totals, want.tables
		got.compare(t, "after an interruption", want)
	}
}

// TestFollowNextPassFindsChangesBehindAPass: a change written while a
// pass reads, to a range the pass has already read, is applied by the
// next pass, even when the pass read a later change elsewhere: the next
// pass reads from where this one started (less the skew), not from its
// newest change.
func TestFollowNextPassFindsChangesBehindAPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	execRow := func(pk, id, status string, ts time.Time) transform.Row {
		return transform.Row{Table: transform.TableEntities, PartitionKey: pk, RowKey: "execution:8235000000000_" + id, Timestamp: ts,
			Props: map[string]transform.Value{"ExecutionId": transform.String(id), "WorkflowName": transform.String("wf"),
				"Status": transform.String(status), "StartedAt": transform.String("2026-11-20T08:00:00"), "ExecutedBy": transform.String("u1")}}
	}
	const behind, early, early2, later = "1b", "0a", "0b", "fc" // in the ranges [1, 2), [-, 1) and [f, g)
	f := &rangesFixture{src: fakes.NewTables(fixtures.Tables()...), docs: fakes.NewDocs(), blobs: fakes.NewBlobs(), dir: filepath.Join(t.TempDir(), "state")}
	f.src.PageSize = 1
	for _, pk := range []string{behind, early, early2, later} {
		f.src.Add(transform.TableEntities, execRow(pk, "e-"+pk, "Running", migratedAt))
	}
	env := Env{Now: func() time.Time { return goldenNow }}
	runOpts := RunOptions{Common: Common{StateDir: filepath.Join(t.TempDir(), "run"), Transform: rangesTransform}}
	if _, err := Run(ctx, runOpts, Deps{Source: f.src, Docs: f.docs, Blobs: f.blobs, Env: env}); err != nil {
		t.Fatal(err)
	}
	// Two changes before the first pass starts: its first page (of one
	// row) reads one, and its ranges the rest.
	start := changedAt
	for _, pk := range []string{early, early2} {
		f.src.Add(transform.TableEntities, execRow(pk, "e-"+pk, "Failed", start.Add(-10*time.Minute)))
	}
	src := newJitter(f.src, 1)
	gate := make(chan struct{})
	src.after = func(table string, q store.Query, p store.Page) {
		if q.From != nil && q.From.PartitionKey == "1" && p.Next.IsZero() && gate != nil {
			// The pass has read the range of `behind`: it changes now, and
			// `later` changes too, in a range the pass has not read yet.
			f.src.Add(transform.TableEntities, execRow(behind, "e-"+behind, "Failed", start.Add(time.Second)))
			f.src.Add(transform.TableEntities, execRow(later, "e-"+later, "Failed", start.Add(100*time.Second)))
			close(gate)
			gate = nil
		}
	}
	held := &gatedRange{jitter: src, from: "f", gate: gate}
	clock := start
	passes := 0
	err := Follow(ctx, FollowOptions{Since: start.Add(-time.Hour), Skew: time.Minute, Interval: time.Second,
		Now: func() time.Time { return clock },
		Sleep: func(context.Context, time.Duration) error {
			clock = clock.Add(200 * time.Second)
			if passes == 2 {
				return context.Canceled
			}
			return nil
		}}, func(ctx context.Context, since time.Time) (PassResult, error) {
		passes++
		opts := ReplayOptions{Common: Common{StateDir: f.dir, Transform: rangesTransform}, WindowOptions: WindowOptions{Since: since}}
		s, err := Replay(ctx, opts, ReplayDeps{Source: held, Docs: f.docs, Blobs: f.blobs, Env: env})
		res := PassResult{Read: s.Totals.Rows, Applied: s.Totals.Writes()}
		if s.Newest != nil {
			res.Newest = *s.Newest
		}
		return res, err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{behind, early, early2, later} {
		o := transform.Transform(execRow(pk, "e-"+pk, "", migratedAt), transform.BlobFacts{}, transform.Options{ExecutionTTL: transform.TTLFull, Now: goldenNow})
		raw, _ := f.docs.Doc(o.Container, o.Scope, o.ID)
		if m, err := transform.DecodeDoc(raw); err != nil || m["status"] != "Failed" {
			t.Errorf("after two passes the doc of %s has status %v (%v), want the change to Failed", pk, m["status"], err)
		}
	}
}

// gatedRange holds the reads of the key range that starts at from until
// gate is closed.
type gatedRange struct {
	*jitter
	from string
	gate chan struct{}
}

func (g *gatedRange) ReadPage(ctx context.Context, table string, q store.Query, from store.Cursor) (store.Page, error) {
	if q.From != nil && q.From.PartitionKey == g.from {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return store.Page{}, ctx.Err()
		}
	}
	return g.jitter.ReadPage(ctx, table, q, from)
}

// TestReplayPassOnLearnedRanges: a pass splits the tables where the
// state directory's ranges say (a full verify learned them), every range
// started without a first page over the whole table, and applies exactly
// what one scan of each table gives. A ranges file it cannot read stops
// the pass before any read, naming the file, with nothing written.
func TestReplayPassOnLearnedRanges(t *testing.T) {
	w := newRangesWorld(t)
	want := oneScan(t, w)

	f := newRangesFixture(t, w, 2)
	learn := store.NewKeySampler(50)
	for _, table := range transform.Tables() {
		learn.Add(table, f.src.Rows(table))
	}
	learned := learn.Ranges()
	if len(learned[transform.TableEntities]) < 2 || len(learned[transform.TableRelationships]) < 2 {
		t.Fatalf("too few splits learned to test: %v", learned)
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveRanges(f.dir, learned); err != nil {
		t.Fatal(err)
	}
	src := newJitter(f.src, 1)
	froms := map[store.Key]bool{}
	whole := 0
	src.before = func(_ string, q store.Query) {
		if q.From != nil {
			froms[*q.From] = true
		}
		if q.From == nil && q.To == nil && q.After == nil {
			whole++
		}
	}
	s, err := f.replay(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	f.outcome(t, s).compare(t, "on learned ranges", want)
	for table, keys := range learned {
		for _, k := range keys {
			if !froms[k] {
				t.Errorf("%s: no range read from the learned split %s/%s", table, k.PartitionKey, k.RowKey)
			}
		}
	}
	if whole != 1 { // Config, of which nothing was learned
		t.Errorf("%d reads over a whole table, want 1 (Config's)", whole)
	}

	g := newRangesFixture(t, w, 2)
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(g.dir, store.RangesFile)
	if err := os.WriteFile(file, []byte("{garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := g.docs.Snapshot()
	gsrc := newJitter(g.src, 1)
	_, err = g.replay(context.Background(), gsrc)
	if want := file + " is not a file of key ranges this version writes: remove it (the passes then split each table as before, and the next full verify writes it again)"; err == nil || err.Error() != want {
		t.Errorf("a garbled ranges file: err %v, want %q", err, want)
	}
	if gsrc.reads != 0 || !reflect.DeepEqual(g.docs.Snapshot(), before) {
		t.Errorf("a garbled ranges file: %d reads, docs changed %v; want none", gsrc.reads, !reflect.DeepEqual(g.docs.Snapshot(), before))
	}
}
