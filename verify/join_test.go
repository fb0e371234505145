package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// joinFixture builds a row index and a doc index by hand, without any
// service: the join is pure.
type joinFixture struct {
	rows *rowIndex
	docs *docIndex
}

func newJoinFixture() *joinFixture {
	return &joinFixture{rows: newRowIndex(), docs: newDocIndex(transform.BlobIndex{})}
}

// row adds a selected row of Entities (kind user) whose doc must be
// entities/GLOBAL/id with content hash h; disp is its disposition.
func (f *joinFixture) row(rk, id, h string, disp transform.Disposition, wantTTL bool) {
	ref := DocRef{Table: transform.TableEntities, PartitionKey: "GLOBAL", RowKey: rk, Container: transform.ContainerEntities, Scope: "GLOBAL", ID: id}
	src := keyOf(ref.Table, ref.PartitionKey, ref.RowKey)
	ki := f.rows.kind(ref.Table, transform.Kind(rk))
	c := &f.rows.kinds[ki]
	c.Rows++
	f.rows.seen[src] = disp
	switch disp {
	case transform.DispositionDoc:
		c.ExpectedDocs++
		f.rows.expected = append(f.rows.expected, expectedDoc{ref: ref, kind: ki, docKey: keyOf(ref.Container, ref.Scope, ref.ID),
			docHash: h, migHash: keyOf("mig", rk, h), wantTTL: wantTTL})
	case transform.DispositionExpired:
		c.Expired++
		f.rows.expected = append(f.rows.expected, expectedDoc{ref: ref, kind: ki, docKey: keyOf(ref.Container, ref.Scope, ref.ID), expired: true})
	case transform.DispositionDroppedIndex:
		c.DroppedIndex++
	}
}

// doc adds a doc at entities/GLOBAL/id with content hash h; migratedFrom
// is the RowKey its _migration names ("" for a doc without one), migH the
// hash its _migration carries.
func (f *joinFixture) doc(id, h, migratedFrom, migH string, ttl *float64, missingBlob bool) {
	a := actualDoc{ref: DocRef{Container: transform.ContainerEntities, Scope: "GLOBAL", ID: id}, docHash: h}
	if migratedFrom != "" {
		a.hasMig = true
		a.ref.Table, a.ref.PartitionKey, a.ref.RowKey = transform.TableEntities, "GLOBAL", migratedFrom
		a.src = keyOf(a.ref.Table, a.ref.PartitionKey, a.ref.RowKey)
		a.migHash = keyOf("mig", migratedFrom, migH)
	}
	if ttl != nil {
		raw, _ := json.Marshal(*ttl)
		a.ttl = ttlState{present: true, raw: raw, inRange: *ttl > 0 && *ttl <= transform.ExecutionRetention}
	}
	if missingBlob {
		a.blobIssues = []blobIssue{{"resultBlobPath", id + "/result.json"}}
	}
	k := keyOf(a.ref.Container, a.ref.Scope, a.ref.ID)
	f.docs.byKey[k] = len(f.docs.actual)
	if a.hasMig {
		if _, dup := f.docs.bySrc[a.src]; !dup {
			f.docs.bySrc[a.src] = len(f.docs.actual)
		}
	}
	f.docs.actual = append(f.docs.actual, a)
	f.docs.read[a.ref.Container]++
}

func ptr[T any](v T) *T { return &v }

// TestJoin is the join's decision table: one case per outcome.
func TestJoin(t *testing.T) {
	type want struct {
		counts     Counts
		appWritten int
		notJudged  int
		jobs       []detailJob // without their fields
		orphans    []string    // reasons
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
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: 0}}}},
		{"different provenance", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "user:a", "older", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: 0}}}},
		{"written by the application where the row's doc belongs", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "", "", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: 0}}}},
		{"moved: found elsewhere through its _migration", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a-elsewhere", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: 0, moved: true}}}},
		{"ttl missing: written by the application, counted, not a difference", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "h", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Matched: 1}, withoutTTL: 1}},
		{"ttl missing and content different", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "other", "user:a", "h", nil, false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: 0}}, withoutTTL: 1}},
		{"ttl out of range", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "h", "user:a", "h", ptr(0.0), false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: -1}}}},
		{"ttl in range", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, true)
			f.doc("user-a", "h", "user:a", "h", ptr(1000.0), false)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Matched: 1}}},
		{"a missing blob", func(f *joinFixture) {
			f.row("user:a", "user-a", "h", transform.DispositionDoc, false)
			f.doc("user-a", "h", "user:a", "h", nil, true)
		}, want{counts: Counts{Rows: 1, ExpectedDocs: 1, Different: 1}, jobs: []detailJob{{exp: 0, act: -1}}}},
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newJoinFixture()
			c.build(f)
			before := *f.rows
			beforeKinds := append([]Counts(nil), f.rows.kinds...)
			r, jobs := join(f.rows, f.docs, []string{transform.TableEntities}, 1)
			if r.Totals != c.want.counts {
				t.Errorf("totals\n got %+v\nwant %+v", r.Totals, c.want.counts)
			}
			if n := r.DocsWithoutTTL[transform.ContainerEntities]; n != c.want.withoutTTL || len(r.WithoutTTL) != n {
				t.Errorf("docs without ttl %d (%d listed), want %d", n, len(r.WithoutTTL), c.want.withoutTTL)
			}
			if r.AppWritten[transform.ContainerEntities] != c.want.appWritten || r.NotJudged != c.want.notJudged {
				t.Errorf("app-written %d, not judged %d; want %d, %d", r.AppWritten[transform.ContainerEntities], r.NotJudged, c.want.appWritten, c.want.notJudged)
			}
			for i := range jobs {
				jobs[i].fields = nil
			}
			if !reflect.DeepEqual(jobs, c.want.jobs) {
				t.Errorf("jobs %+v, want %+v", jobs, c.want.jobs)
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

// Docs of tables outside the selection, or rows outside the sample, are
// not judged: neither orphans nor application-written.
func TestJoinNotJudged(t *testing.T) {
	f := newJoinFixture()
	f.doc("user-x", "h", "user:x", "h", nil, false)
	r, _ := join(f.rows, f.docs, []string{transform.TableConfig}, 1)
	if r.NotJudged != 1 || r.Totals.Orphans != 0 {
		t.Errorf("outside the selection: not judged %d, orphans %d", r.NotJudged, r.Totals.Orphans)
	}
	// A sample so small that no row key falls in it.
	r, _ = join(f.rows, f.docs, []string{transform.TableEntities}, 1e-18)
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
