package verify

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
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
}

func newSinceWorld(t *testing.T, n int) *sinceWorld {
	t.Helper()
	w := &sinceWorld{testWorld: newTestWorld(t, n), start: worldNow, dir: t.TempDir()}
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
	v := &Verifier{Rows: w.tables, Docs: w.docs.Reader(), Blobs: w.blobs, Changes: w.docs.Reader(), Position: w.docs.Reader().Since,
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
