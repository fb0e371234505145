package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/fakes"
	"github.com/bifrost/bifrost-migrate/transform"
)

// TestSettle is the decision table of a finding read again.
func TestSettle(t *testing.T) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	before, after := start.Add(-time.Minute), start.Add(time.Second)
	exp := expectedDoc{docHash: "h", migHash: key{1}}
	doc := func(ts time.Time, mig bool, hash string) actualDoc {
		a := actualDoc{docHash: hash, ts: ts.Unix(), hasMig: mig}
		if mig {
			a.migHash = key{1}
		}
		return a
	}
	row := func(ts time.Time) reread { return reread{rowFound: true, rowTS: ts, expects: true, exp: exp} }
	with := func(x reread, a actualDoc) reread { x.docFound, x.act = true, a; return x }
	cases := []struct {
		name  string
		kind  findingKind
		moved bool
		x     reread
		want  settled
	}{
		{"different, now the same (a replay caught up)", findingDifferent, false, with(row(before), doc(after, true, "h")), agrees},
		{"different, row written after the start", findingDifferent, false, with(row(after), doc(before, true, "old")), inFlight},
		{"different, the application's doc written after the start", findingDifferent, false, with(row(before), doc(after, false, "app")), inFlight},
		{"different, tampered: written after the start with the row's _migration", findingDifferent, false, with(row(before), doc(after, true, "x")), stands},
		{"different, old and still different", findingDifferent, false, with(row(before), doc(before, true, "x")), stands},
		{"different, the doc is gone, its row unchanged", findingDifferent, false, row(before), nowMissing},
		{"different, both gone", findingDifferent, false, reread{}, agrees},
		{"different, the row expired since", findingDifferent, false, with(reread{rowFound: true, rowTS: before, expects: true, exp: expectedDoc{expired: true}}, doc(before, true, "x")), agrees},
		{"moved, row unchanged", findingDifferent, true, with(row(before), doc(before, true, "h")), stands},
		{"moved, row written after the start", findingDifferent, true, with(row(after), doc(before, true, "h")), inFlight},
		{"missing, there now and the same", findingMissing, false, with(row(before), doc(after, true, "h")), agrees},
		{"missing, a new row not replayed yet", findingMissing, false, row(after), inFlight},
		{"missing, still missing", findingMissing, false, row(before), stands},
		{"missing, its row deleted too", findingMissing, false, reread{}, agrees},
		{"missing, its row no longer expects a doc", findingMissing, false, reread{rowFound: true, rowTS: after}, agrees},
		{"missing, there now but different", findingMissing, false, with(row(before), doc(before, true, "x")), nowDifferent},
		{"missing, there now, written by the application after the start", findingMissing, false, with(row(before), doc(after, false, "app")), inFlight},
		{"orphan, gone now", findingOrphan, false, reread{}, agrees},
		{"orphan, its row is back and expects it", findingOrphan, false, with(row(after), doc(before, true, "h")), agrees},
		{"orphan, written after the start", findingOrphan, false, with(reread{}, doc(after, true, "h")), inFlight},
		{"orphan, its row written after the start", findingOrphan, false, with(reread{rowFound: true, rowTS: after}, doc(before, true, "h")), inFlight},
		{"orphan, old", findingOrphan, false, with(reread{}, doc(before, true, "h")), stands},
	}
	for _, c := range cases {
		if got := settle(c.kind, c.moved, c.x, start); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// stepHook is a Progress that runs fn once, when verify starts comparing:
// after both sides were read, before the findings are read again.
type stepHook struct{ fn func() }

func (h *stepHook) Step(msg string) {
	if msg == "comparing" && h.fn != nil {
		h.fn()
		h.fn = nil
	}
}

// A full verify while rows and docs change under it: what changed in
// flight (a row edited after the start whose doc a replay has not
// written yet, a new row without its doc yet, a doc the application
// wrote after the start, an orphan written after the start) is counted
// apart, not as a difference; what a replay finished meanwhile (a doc
// written for a row changed before the start, a new row's doc) is
// matched; a doc tampered with after the start while its row did not
// change is still a difference, and an old orphan still an orphan.
func TestRunChangesInFlight(t *testing.T) {
	w := newTestWorld(t, 40)
	start := worldNow
	clock := start.Add(-time.Hour)
	w.docs.Now = func() time.Time { return clock }
	rowsAt := func(ref DocRef) transform.Row {
		r, ok := w.tables.Row(ref.Table, ref.PartitionKey, ref.RowKey)
		if !ok {
			t.Fatalf("no row %s", ref)
		}
		r.Table = ref.Table
		return r
	}
	// Executions without blobs: a blob uploaded while verify runs is not
	// in its listing.
	execs := []DocRef{}
	for _, ref := range w.placed {
		if ref.Container == transform.ContainerExecutions {
			d := w.doc(t, ref)
			if d["resultBlobPath"] == nil && d["logsBlobPath"] == nil {
				execs = append(execs, ref)
			}
		}
	}
	edit := func(ref DocRef, ts time.Time, status string) transform.Row {
		r := rowsAt(ref)
		r.Props["Status"] = transform.String(status)
		r.Timestamp = ts
		w.tables.Add(ref.Table, r)
		return r
	}
	replay := func(r transform.Row) {
		o := transform.Transform(r, transform.BlobFacts{}, w.opts)
		if o.Disposition != transform.DispositionDoc {
			t.Fatalf("row %s/%s: %s %s", r.PartitionKey, r.RowKey, o.Disposition, o.DeadLetter)
		}
		for _, u := range o.Uploads {
			must(t, w.blobs.Upload(context.Background(), u.Path, u.Data))
		}
		w.docs.Put(o.Container, o.DocJSON)
	}
	// Before verify reads: the changes it will read half-done.
	edit(execs[0], start.Add(time.Minute), "Cancelled")          // its doc is replayed after verify ends
	lagging := edit(execs[1], start.Add(-time.Minute), "Failed") // changed before the start, replayed meanwhile
	newRow := rowsAt(execs[2])
	newRow.RowKey, newRow.Timestamp = newRow.RowKey+"-new", start.Add(time.Minute)
	newRow.Props["ExecutionId"] = transform.String(execs[2].ID + "-new")
	w.tables.Add(newRow.Table, newRow) // a new row, no doc yet
	replayedRow := rowsAt(execs[3])
	replayedRow.RowKey, replayedRow.Timestamp = replayedRow.RowKey+"-replayed", start.Add(time.Minute)
	replayedRow.Props["ExecutionId"] = transform.String(execs[3].ID + "-replayed")
	w.tables.Add(replayedRow.Table, replayedRow) // a new row whose doc is written meanwhile
	clock = start.Add(2 * time.Second)
	app := w.doc(t, execs[4])
	delete(app, "_migration")
	app["status"] = "Running"
	w.put(t, transform.ContainerExecutions, app) // the application's doc, after the start
	tampered := w.doc(t, execs[5])
	tampered["status"] = "Tampered"
	w.put(t, transform.ContainerExecutions, tampered) // _migration intact, after the start
	fresh := w.doc(t, execs[6])
	fresh["id"] = execs[6].ID + "-fresh"
	fresh["_migration"].(map[string]any)["rowKey"] = "execution:gone-fresh"
	w.put(t, transform.ContainerExecutions, fresh) // an orphan written after the start
	clock = start.Add(-time.Hour)
	old := w.doc(t, execs[7])
	old["id"] = execs[7].ID + "-old"
	old["_migration"].(map[string]any)["rowKey"] = "execution:gone-old"
	w.put(t, transform.ContainerExecutions, old) // an orphan from before the start
	clock = start.Add(5 * time.Second)

	hook := &stepHook{fn: func() {
		// While verify compares: a replay catches up on two of them.
		replay(lagging)
		replay(replayedRow)
	}}
	v := &Verifier{Rows: w.tables, Docs: w.docs.Reader(), Blobs: w.blobs, Progress: hook, Now: func() time.Time { return start }}
	r, err := v.Run(context.Background(), Options{Transform: w.opts, Started: start})
	must(t, err)
	if got, want := [4]int{r.Totals.ChangedWhileRunning, r.Totals.Different, r.Totals.Missing, r.Totals.Orphans}, [4]int{4, 1, 0, 1}; got != want {
		t.Fatalf("changed while running, different, missing, orphans: %v, want %v\n%s\n%s\n%s", got, want, fakes.JSON(r.Totals), fakes.JSON(r.Differences), fakes.JSON(r.ChangedWhileRunning))
	}
	if r.OK {
		t.Errorf("OK with a tampered doc")
	}
	if d := r.Differences; len(d) != 1 || d[0].Doc.ID != execs[5].ID || d[0].Path != "status" {
		t.Errorf("differences %s, want the tampered doc's status", fakes.JSON(d))
	}
	if o := r.Orphans; len(o) != 1 || o[0].ID != execs[7].ID+"-old" {
		t.Errorf("orphans %s, want the old one", fakes.JSON(o))
	}
	inFlight := map[string]bool{}
	for _, ref := range r.ChangedWhileRunning {
		inFlight[ref.ID] = true
	}
	for _, id := range []string{execs[0].ID, transform.ExecutionID(newRow), execs[4].ID, execs[6].ID + "-fresh"} {
		if !inFlight[id] {
			t.Errorf("%s is not among the docs changed while verify ran: %v", id, inFlight)
		}
	}
	if want := fmt.Sprintf("verify: %d row(s) not migrated; 0 missing, 1 different, 1 orphan doc(s); 4 doc(s) changed while verify ran: `bifrost-migrate verify --since %s` judges them",
		r.NotMigrated, start.Format(time.RFC3339)); r.VerdictLine() != want {
		t.Errorf("verdict %q\nwant %q", r.VerdictLine(), want)
	}
	if lines := reportVerdict(r).Lines; !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "4 doc(s) changed while verify ran") }) {
		t.Errorf("the HTML page does not say what changed while verify ran: %q", lines)
	}
}
