package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// worldNow is the time of the test worlds: their executions start within
// the 13 days before it.
var worldNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// testWorld is a migrated deployment in the fakes: the fixture rows of
// every kind and n generated executions with their index rows and blobs,
// and the docs run would have written for them.
type testWorld struct {
	tables *fakes.Tables
	docs   *fakes.Docs
	blobs  *fakes.Blobs
	opts   transform.Options
	// placed are the docs written, in read order of their rows.
	placed []DocRef
}

// newTestWorld builds a world of n generated executions, migrated.
func newTestWorld(t *testing.T, n int) *testWorld {
	t.Helper()
	w := &testWorld{tables: fakes.NewTables(), docs: fakes.NewDocs(), blobs: fakes.NewBlobs(), opts: transform.Options{Now: worldNow}.WithDefaults()}
	w.tables.PageSize = 37
	// The docs are written an hour before the world's time, as a run
	// would have written them: their ttl runs from then.
	w.docs.Now = func() time.Time { return worldNow.Add(-2 * time.Hour) }
	rows := map[string][]transform.Row{}
	for _, table := range transform.Tables() {
		rs, err := fixtures.Rows(table)
		must(t, err)
		for i := range rs {
			rs[i].Timestamp = worldNow.Add(-48 * time.Hour)
		}
		rows[table] = rs
	}
	fblobs, err := fixtures.Blobs()
	must(t, err)
	for _, b := range fblobs {
		must(t, w.blobs.Upload(context.Background(), b.Path, b.Data))
	}
	err = fixtures.Generate(fixtures.GenerateOptions{N: n, Seed: 7, Base: worldNow.Add(-time.Hour)}, func(it fixtures.Item) error {
		if it.Table == "" {
			return w.blobs.Upload(context.Background(), it.Blob.Path, it.Blob.Data)
		}
		it.Row.Timestamp = worldNow.Add(-24 * time.Hour)
		rows[it.Table] = append(rows[it.Table], it.Row)
		return nil
	})
	must(t, err)
	for table, rs := range rows {
		w.tables.Add(table, rs...)
	}
	blobs := transform.BlobIndex{}
	must(t, w.blobs.List(context.Background(), blobs.Add))
	ids := transform.NewIDSet()
	for _, table := range transform.Tables() {
		for _, row := range w.tables.Rows(table) {
			var facts transform.BlobFacts
			if table == transform.TableEntities && transform.Kind(row.RowKey) == "execution" {
				facts = blobs.Facts(transform.ExecutionID(row))
			}
			o := ids.Check(transform.Transform(row, facts, w.opts))
			if o.Disposition != transform.DispositionDoc {
				continue
			}
			for _, u := range o.Uploads {
				must(t, w.blobs.Upload(context.Background(), u.Path, u.Data))
			}
			w.docs.Put(o.Container, o.DocJSON)
			w.placed = append(w.placed, DocRef{Table: table, PartitionKey: row.PartitionKey, RowKey: row.RowKey, Container: o.Container, Scope: o.Scope, ID: o.ID})
		}
	}
	return w
}

// doc returns the doc at ref's place, decoded, without its system
// properties.
func (w *testWorld) doc(t *testing.T, ref DocRef) map[string]any {
	t.Helper()
	raw, ok := w.docs.Doc(ref.Container, ref.Scope, ref.ID)
	if !ok {
		t.Fatalf("no doc at %s", ref)
	}
	d, err := transform.DecodeDoc(raw)
	must(t, err)
	for _, p := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		delete(d, p)
	}
	return d
}

// put stores d as the application would.
func (w *testWorld) put(t *testing.T, container string, d map[string]any) {
	t.Helper()
	b, err := json.Marshal(d)
	must(t, err)
	w.docs.Put(container, b)
}

func (w *testWorld) del(t *testing.T, ref DocRef) {
	t.Helper()
	_, err := w.docs.Delete(context.Background(), ref.Container, ref.Scope, ref.ID, "")
	must(t, err)
}

// spoil makes every kind of finding: missing, different (content, ttl,
// provenance), moved, orphans of every reason, application-written docs
// and docs without ttl; it returns how many docs it made differ.
func (w *testWorld) spoil(t *testing.T) {
	t.Helper()
	for i, ref := range w.placed {
		switch {
		case i%17 == 3:
			w.del(t, ref)
		case i%23 == 5:
			d := w.doc(t, ref)
			if ref.Container == transform.ContainerExecutions {
				d["status"] = "Tampered"
			} else {
				d["tampered"] = true
			}
			w.put(t, ref.Container, d)
		case i%29 == 7 && ref.Container == transform.ContainerExecutions:
			d := w.doc(t, ref)
			delete(d, "ttl")
			w.put(t, ref.Container, d)
		case i%31 == 9:
			// Moved: the doc is elsewhere, its _migration still naming
			// the row.
			d := w.doc(t, ref)
			w.del(t, ref)
			d["id"] = ref.ID + "-moved"
			w.put(t, ref.Container, d)
		case i%37 == 11:
			// A second doc of the row.
			d := w.doc(t, ref)
			d["id"] = ref.ID + "-copy"
			w.put(t, ref.Container, d)
		case i%41 == 13:
			// An orphan: its _migration names a row that does not exist.
			d := w.doc(t, ref)
			d["id"] = ref.ID + "-orphan"
			d["_migration"].(map[string]any)["rowKey"] = ref.RowKey + "-gone"
			w.put(t, ref.Container, d)
		case i%43 == 17:
			// The application's own doc.
			w.docs.Put(ref.Container, fmt.Appendf(nil, `{"id":%q,"scope":%q,"type":"note"}`, ref.ID+"-app", ref.Scope))
		}
	}
}

// reportJSON is r as JSON without what differs between two runs on the
// same data (the elapsed time).
func reportJSON(t *testing.T, r *Report) []byte {
	t.Helper()
	c := *r
	c.ElapsedSeconds = 0
	b, err := json.MarshalIndent(&c, "", " ")
	must(t, err)
	return b
}

// A verify whose every sorter and set holds almost nothing in memory
// (every record goes through sorted runs on disk) gives the same report,
// byte for byte, as one that holds everything in memory: the same counts,
// the same lists in the same order, the same field paths.
func TestRunTinyMemorySameReport(t *testing.T) {
	w := newTestWorld(t, 300)
	w.spoil(t)
	v := &Verifier{Rows: w.tables, Docs: w.docs.Reader(), Blobs: w.blobs, Now: func() time.Time { return worldNow }}
	run := func(z sizes, tempDir string) (*Report, bool) {
		spilled := false
		r, err := v.Run(context.Background(), Options{Transform: w.opts, PageSize: 50, TempDir: tempDir, sizes: z, spilled: &spilled})
		must(t, err)
		return r, spilled
	}
	big, spilledBig := run(sizes{}, "")
	temp := t.TempDir() + "/verify.tmp"
	small, spilledSmall := run(tiny, temp)
	if spilledBig || !spilledSmall {
		t.Fatalf("spilled: %v with the default sizes, %v with tiny ones; want false, true", spilledBig, spilledSmall)
	}
	if a, b := reportJSON(t, big), reportJSON(t, small); !bytes.Equal(a, b) {
		t.Fatalf("reports differ:\nin memory:\n%.3000s\non disk:\n%.3000s", a, b)
	}
	if _, err := os.Lstat(temp); err == nil {
		t.Errorf("the sorted runs are left in %s", temp)
	}
	// The world has every kind of finding, so the comparison means
	// something.
	tot := big.Totals
	if tot.Missing == 0 || tot.Different < 10 || tot.Orphans < 3 || tot.Matched < 100 || total(big.AppWritten) == 0 ||
		total(big.DocsWithoutTTL) == 0 || big.AccessPatterns.Unindexed+big.AccessPatterns.Stale+big.AccessPatterns.Dangling == 0 || big.NotMigrated == 0 {
		t.Errorf("the world lacks a kind of finding: %+v, app-written %v, without ttl %v, access %+v, not migrated %d",
			tot, big.AppWritten, big.DocsWithoutTTL, big.AccessPatterns, big.NotMigrated)
	}
	var reasons []string
	for _, o := range big.Orphans {
		if !slices.Contains(reasons, o.Reason) {
			reasons = append(reasons, o.Reason)
		}
	}
	slices.Sort(reasons)
	if want := []string{"a second doc of a row whose doc is elsewhere", "its row no longer exists"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("orphan reasons %q, want %q", reasons, want)
	}
	moved := 0
	for _, d := range big.Differences {
		if d.ActualDoc != nil {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no moved doc among the differences")
	}
}
