package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// joinFixture builds a row index and a doc index by hand, without any
// service: the join only reads them.
type joinFixture struct {
	t    *testing.T
	work *work
	rows *rowIndex
	docs *docIndex
	seq  uint64
	rec  recWriter
}

func newJoinFixture(t *testing.T, z sizes) *joinFixture {
	w := newWork(t.TempDir(), z)
	t.Cleanup(func() { _ = w.close() })
	return &joinFixture{t: t, work: w, rows: newRowIndex(w), docs: newDocIndex(transform.BlobIndex{}, w)}
}

// row adds a selected row of Entities (kind user) whose doc must be
// entities/GLOBAL/id with content hash h; disp is its disposition.
func (f *joinFixture) row(rk, id, h string, disp transform.Disposition, wantTTL bool) {
	f.t.Helper()
	ref := DocRef{Table: transform.TableEntities, PartitionKey: "GLOBAL", RowKey: rk, Container: transform.ContainerEntities, Scope: "GLOBAL", ID: id}
	ki := f.rows.kind(ref.Table, transform.Kind(rk))
	c := &f.rows.kinds[ki]
	c.Rows++
	f.seq++
	f.rec.seen(seenRow{ref.Table, ref.PartitionKey, ref.RowKey, disp})
	must(f.t, f.rows.seen.Add(f.rec.b))
	switch disp {
	case transform.DispositionDoc:
		c.ExpectedDocs++
		f.rec.expected(&expectedDoc{ref: ref, seq: f.seq, kind: ki, docHash: h, migHash: keyOf("mig", rk, h), wantTTL: wantTTL}, false)
		must(f.t, f.rows.exp.Add(f.rec.b))
	case transform.DispositionExpired:
		c.Expired++
		f.rec.expected(&expectedDoc{ref: ref, seq: f.seq, kind: ki, expired: true}, false)
		must(f.t, f.rows.exp.Add(f.rec.b))
	case transform.DispositionDroppedIndex:
		c.DroppedIndex++
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// doc adds a doc at entities/GLOBAL/id with content hash h; migratedFrom
// is the RowKey its _migration names ("" for a doc without one), migH the
// hash its _migration carries.
func (f *joinFixture) doc(id, h, migratedFrom, migH string, ttl *float64, missingBlob bool) {
	f.t.Helper()
	a := actualDoc{ref: DocRef{Container: transform.ContainerEntities, Scope: "GLOBAL", ID: id}, docHash: h}
	if migratedFrom != "" {
		a.hasMig = true
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = transform.TableEntities, "GLOBAL", migratedFrom
		a.migHash = keyOf("mig", migratedFrom, migH)
	}
	if ttl != nil {
		raw, _ := json.Marshal(*ttl)
		a.ttl = ttlState{present: true, raw: raw, inRange: *ttl > 0 && *ttl <= transform.ExecutionRetention}
	}
	if missingBlob {
		a.blobIssues = []blobIssue{{"resultBlobPath", id + "/result.json"}}
	}
	f.docs.seq++
	a.seq = f.docs.seq
	f.rec.actual(&a, false)
	must(f.t, f.docs.act.Add(f.rec.b))
	f.docs.read[a.ref.Container]++
}

// jobWant is a detail job as TestJoin checks it: the row's RowKey, the
// doc's id ("" when it is not read again), and whether it moved.
type jobWant struct {
	row, doc string
	moved    bool
}

func jobsOf(jobs []detailJob) []jobWant {
	var out []jobWant
	for _, j := range jobs {
		w := jobWant{row: j.exp.ref.RowKey, moved: j.moved}
		if j.read {
			w.doc = j.act.ref.ID
		}
		out = append(out, w)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestJoin is the join's decision table: one case per outcome.
func TestJoin(t *testing.T) {
	type want struct {
		counts     Counts
		appWritten int
		notJudged  int
		jobs       []jobWant
		orphans    []string // reasons
		withoutTTL int
	}
	cases := []struct {
		name  string
		build func(f *joinFixture)
		want  want
	}{
		{"matched", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Matched: 1}}},
		{"missing", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Missing: 1}}},
		{"different content", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "other", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "user-a", false}}}},
		{"different provenance", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "user:a", "older", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "user-a", false}}}},
		{"written by the application where the row's doc belongs", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "", "", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "user-a", false}}}},
		{"moved: found elsewhere through its _migration", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a-elsewhere", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "user-a-elsewhere", true}}}},
		{"ttl missing: written by the application, counted, not a difference", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Matched: 1}, withoutTTL: 1}},
		{"ttl missing and content different", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "other", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "user-a", false}}, withoutTTL: 1}},
		{"ttl out of range", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "h", "user:a", "h", ptr(0.0), false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "", false}}}},
		{"ttl in range", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "h", "user:a", "h", ptr(1000.0), false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Matched: 1}}},
		{"a missing blob", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "user:a", "h", nil, true)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []jobWant{{"user:a", "", false}}}},
		{"expired, doc still there", func(f *joinFixture) {
			f.row("user:a", "user-a", "", transform.DispositionExpired, false)
			f.doc("user-a", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, Expired: 1, ExpiredPresent: 1}}},
		{"expired, doc gone", func(f *joinFixture) {
			f.row("user:a", "user-a", "", transform.DispositionExpired, false)
		}, want{counts: Counts{Rows: 1, Expired: 1}}},
		{"written by the application elsewhere", func(f *joinFixture) {
			f.doc("user-new", "h", "", "", nil, false)
		}, want{appWritten: 1}},
		{"orphan: its row is gone", func(f *joinFixture) {
			f.doc("user-gone", "h", "user:gone", "h", nil, false)
		}, want{counts: Counts{Orphans: 1}, orphans: []string{"its row no longer exists"}}},
		{"orphan: its row is an index now", func(f *joinFixture) {
			f.row("user:b", "", "", transform.DispositionDroppedIndex, false)
			f.doc("user-b", "h", "user:b", "h", nil, false)
		}, want{counts: Counts{Rows: 1, DroppedIndex: 1, Orphans: 1}, orphans: []string{"its row's disposition is now dropped-index"}}},
		{"orphan: a second doc of a row", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a-copy", "h", "user:a", "h", nil, false)
			f.doc("user-a", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Matched: 1, Orphans: 1}, orphans: []string{"a second doc of a row whose doc is elsewhere"}}},
		{"orphans among rows without one", func(f *joinFixture) {
			// Rows before, between and after the rows the orphans name.
			f.row("user:0", "", "", transform.DispositionDroppedIndex, false)
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.row("user:b", "", "", transform.DispositionDroppedIndex, false)
			f.row("user:c", "", "", transform.DispositionKeptInTables, false)
			f.row("user:d", "", "", transform.DispositionDroppedIndex, false)
			f.row("user:e", "user-e", "h", transform.DispositionDoc, false)
			f.row("user:f", "", "", transform.DispositionKeptInTables, false)
			f.doc("user-a", "h", "user:a", "h", nil, false)
			f.doc("user-e", "h", "user:e", "h", nil, false)
			f.doc("user-c", "h", "user:c", "h", nil, false)
			f.doc("user-a-copy", "h", "user:a", "h", nil, false)
			f.doc("user-cc", "h", "user:cc", "h", nil, false)
		}, want{counts: Counts{Rows: 7, ExpectedDocs: 2, Matched: 2, DroppedIndex: 3, Orphans: 3},
			orphans: []string{"a second doc of a row whose doc is elsewhere", "its row's disposition is now kept-in-tables", "its row no longer exists"}}},
	}
	for _, c := range cases {
		for _, z := range []sizes{{}, tiny} {
			t.Run(fmt.Sprintf("%s/%d", c.name, z.sortBytes), func(t *testing.T) {
				f := newJoinFixture(t, z)
				c.build(f)
				before := *f.rows
				beforeKinds := append([]Counts(nil), f.rows.kinds...)
				j, err := join(f.rows, f.docs, f.work, []string{transform.TableEntities}, 1, MaxDetailedDocs, nil)
				must(t, err)
				r, jobs := j.r, j.jobs
				if r.Totals != c.want.counts {
					t.Errorf("totals\n got %+v\nwant %+v", r.Totals, c.want.counts)
				}
				if n := r.DocsWithoutTTL[transform.ContainerEntities]; n != c.want.withoutTTL || len(r.WithoutTTL) != n {
					t.Errorf("docs without ttl %d (%d listed), want %d", n, len(r.WithoutTTL), c.want.withoutTTL)
				}
				if r.AppWritten[transform.ContainerEntities] != c.want.appWritten || r.NotJudged != c.want.notJudged {
					t.Errorf("app-written %d, not judged %d; want %d, %d", r.AppWritten[transform.ContainerEntities], r.NotJudged, c.want.appWritten, c.want.notJudged)
				}
				if got := jobsOf(jobs); !reflect.DeepEqual(got, c.want.jobs) {
					t.Errorf("jobs %+v, want %+v", got, c.want.jobs)
				}
				var reasons []string
				for _, o := range r.Orphans {
					reasons = append(reasons, o.Reason)
				}
				if !reflect.DeepEqual(reasons, c.want.orphans) {
					t.Errorf("orphans %q, want %q", reasons, c.want.orphans)
				}
				if wantOK := r.Totals.Missing+r.Totals.Different+r.Totals.Orphans == 0; r.OK != wantOK {
					t.Errorf("OK %v, want %v", r.OK, wantOK)
				}
				if !reflect.DeepEqual(f.rows.kinds, beforeKinds) || len(f.rows.kindNames) != len(before.kindNames) {
					t.Errorf("join changed the row index's counts")
				}
			})
		}
	}
}

// tiny are sizes that send every sorter and set to disk at once: the
// report must be the same as with everything in memory.
var tiny = sizes{sortBytes: 64, idMemoryKeys: 2, idFilterBytes: 64, execMemoryKeys: 2, execFilterBytes: 64}

// Docs of tables outside the selection, or rows outside the sample, are
// not judged: neither orphans nor application-written.
func TestJoinNotJudged(t *testing.T) {
	f := newJoinFixture(t, sizes{})
	f.doc("user-x", "h", "user:x", "h", nil, false)
	j, err := join(f.rows, f.docs, f.work, []string{transform.TableConfig}, 1, MaxDetailedDocs, nil)
	must(t, err)
	r := j.r
	if r.NotJudged != 1 || r.Totals.Orphans != 0 {
		t.Errorf("outside the selection: not judged %d, orphans %d", r.NotJudged, r.Totals.Orphans)
	}
	// A sample so small that no row key falls in it.
	f = newJoinFixture(t, sizes{})
	f.doc("user-x", "h", "user:x", "h", nil, false)
	j, err = join(f.rows, f.docs, f.work, []string{transform.TableEntities}, 1e-18, MaxDetailedDocs, nil)
	must(t, err)
	r = j.r
	if r.NotJudged != 1 || r.Totals.Orphans != 0 {
		t.Errorf("outside the sample: not judged %d, orphans %d", r.NotJudged, r.Totals.Orphans)
	}
}

// inMemory returns a Verifier of the services in memory (internal/fakes):
// tables holding rows (by table; no other table exists), docs (by
// container) and no blobs, for a whole Run without emulators.
func inMemory(rows map[string][]transform.Row, docs map[string][][]byte) *Verifier {
	tables := fakes.NewTables()
	for table, rs := range rows {
		tables.Add(table, rs...)
	}
	db := fakes.NewDocs()
	for container, ds := range docs {
		for _, d := range ds {
			db.Put(container, d)
		}
	}
	return &Verifier{Rows: tables, Docs: db.Reader(), Blobs: fakes.NewBlobs()}
}

// A whole Run in memory: the report's elapsed time comes from the
// injected clock, and a doc the application changed is found with its
// field path.
func TestRunWithAnInjectedClock(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	row := transform.Row{Table: transform.TableEntities, PartitionKey: "GLOBAL", RowKey: "role:r1", Timestamp: now,
		Props: map[string]transform.Value{"Name": transform.String("admins"), "IsActive": {Type: transform.EdmBoolean, Bool: true}}}
	topts := transform.Options{Now: now}
	o := transform.Transform(row, transform.BlobFacts{}, topts.WithDefaults())
	changed := bytes.Replace(o.DocJSON, []byte(`"admins"`), []byte(`"owners"`), 1)
	clock := now
	v := inMemory(map[string][]transform.Row{transform.TableEntities: {row}}, map[string][][]byte{transform.ContainerEntities: {changed}})
	v.Now = func() time.Time {
		clock = clock.Add(2 * time.Second)
		return clock
	}
	r, err := v.Run(context.Background(), Options{Transform: topts, Tables: []string{transform.TableEntities}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ElapsedSeconds != 2 {
		t.Errorf("elapsed %v s, want 2 (two reads of the injected clock)", r.ElapsedSeconds)
	}
	if r.Totals.Different != 1 || len(r.Differences) != 1 || r.Differences[0].Path != "name" {
		t.Errorf("totals %+v, differences %+v", r.Totals, r.Differences)
	}
}
