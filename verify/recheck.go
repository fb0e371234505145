package verify

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bifrost/bifrost-migrate/store"
	"github.com/bifrost/bifrost-migrate/transform"
)

// Changes in flight (docs/design.md, "verify"). A verify reads the tables
// and the docs while the application, or a `replay --follow` keeping
// Cosmos DB in step, may change both: a row read before it changed and a
// doc read after its replay, or the other way round, differ without
// anything being wrong. So every finding (a missing, different or orphan
// doc) is read again once the join ends — its row and its doc, now —
// and judged again (settle):
//
//   - the two sides agree now (or are both gone): it is counted matched;
//   - they still differ, and the row was written at or after verify's
//     start (its Timestamp), or the doc was, by the application (its _ts,
//     and no _migration): a change in flight, counted apart as "changed
//     while verify ran" — not a difference; `verify --since <start>` judges
//     it, since both its row and its doc are changes since then;
//   - else it stands: a difference, with the field paths of the doc as it
//     is now. A doc the tool would write carries the _migration of its
//     row; one that differs from a row written before the start while its
//     _migration names that row was not written by a replay: tampered,
//     whatever its _ts.
//
// At most MaxRecheck findings are read again (differences first, then
// missing docs, then orphans, each in report order); the rest stand as
// the join found them, and the report says how many.

// MaxRecheck is how many findings verify reads again.
const MaxRecheck = 10000

// recheckConcurrency is how many findings are read again at once.
const recheckConcurrency = 8

// findingKind is what the join found.
type findingKind uint8

const (
	findingDifferent findingKind = iota
	findingMissing
	findingOrphan
)

// settled is what a finding is once read again.
type settled uint8

const (
	// stands: still what the join found (a different doc still differs,
	// a missing doc is still missing, an orphan is still one).
	stands settled = iota
	// agrees: the two sides agree now, or are both gone.
	agrees
	// inFlight: written while verify ran; --since judges it.
	inFlight
	// nowMissing: a different doc that is gone now, its row unchanged.
	nowMissing
	// nowDifferent: a missing doc that is there now, and differs.
	nowDifferent
)

// reread is a finding's row and doc as they are now.
type reread struct {
	rowFound bool
	rowTS    time.Time
	// exp is the row's expected doc now (expired set when the row's
	// disposition is expired), valid when expects is set: the row's
	// disposition is doc or expired and its doc's place is the finding's.
	exp     expectedDoc
	expects bool
	// act is the doc now, at the finding's place, valid when docFound.
	docFound bool
	act      actualDoc
	// fields are the ttl and blob problems of act against exp.
	fields []fieldDiff
}

// same reports whether the doc now is what the row expects now.
func (x *reread) same() bool {
	return x.expects && x.docFound && !x.exp.expired && x.act.hasMig && x.act.docHash == x.exp.docHash &&
		x.act.migHash == x.exp.migHash && len(x.fields) == 0
}

// settle decides what a finding of kind k is now, from x; moved says a
// different doc was found away from its row's place (it can only stand
// or be in flight: a doc elsewhere is never the row's). start is when
// verify started. It is pure.
func settle(k findingKind, moved bool, x reread, start time.Time) settled {
	// A _ts is in whole seconds: a doc of the start's second may have
	// been written before the start, so only a later second counts.
	rowChanged := x.rowFound && !x.rowTS.Before(start)
	docWritten := x.docFound && x.act.ts > start.Unix()
	docByApp := docWritten && !x.act.hasMig
	switch k {
	case findingOrphan:
		switch {
		case !x.docFound:
			return agrees
		case x.expects && x.same():
			return agrees
		case rowChanged || docWritten:
			return inFlight
		}
		return stands
	case findingMissing:
		switch {
		case !x.rowFound && !x.docFound, x.rowFound && !x.expects && !x.docFound:
			return agrees
		case x.expects && x.exp.expired:
			return agrees // expired now: may be present or absent
		case x.same():
			return agrees
		case rowChanged || docByApp:
			return inFlight
		case x.docFound:
			return nowDifferent
		}
		return stands
	}
	switch {
	case moved:
		if rowChanged {
			return inFlight
		}
		return stands
	case !x.rowFound && !x.docFound:
		return agrees
	case x.expects && x.exp.expired:
		return agrees
	case x.same():
		return agrees
	case rowChanged || docByApp:
		return inFlight
	case x.rowFound && x.expects && !x.docFound:
		return nowMissing
	}
	return stands
}

// recheckItem is one finding to read again and what it became.
type recheckItem struct {
	kind   findingKind
	job    detailJob // a different doc: the row's expected doc and the doc compared
	exp    expectedDoc
	orphan Orphan
	got    settled
	now    reread
	// diffs are the differing fields now of a doc that stands different
	// or became so.
	diffs []fieldDiff
}

// place is the doc the finding is about: the doc compared (different),
// the row's place (missing) or the orphan.
func (it *recheckItem) place() DocRef { return it.about(it.job.act.ref) }

// row is the row the finding is about.
func (it *recheckItem) row() DocRef { return it.about(it.job.exp.ref) }

// about is the ref of a missing row or of an orphan, or compared for a
// different doc.
func (it *recheckItem) about(compared DocRef) DocRef {
	switch it.kind {
	case findingMissing:
		return it.exp.ref
	case findingOrphan:
		return it.orphan.DocRef
	}
	return compared
}

// reread reads the finding's row and doc again, settles it, and computes
// the differing fields of a doc that differs now.
func (s *state) reread(ctx context.Context, it *recheckItem) error {
	place, row := it.place(), it.row()
	moved := it.kind == findingDifferent && it.job.moved
	var x reread
	r, found, err := store.Lookup(ctx, s.v.Rows, s.opts.TablePrefix, row.Table, store.Key{PartitionKey: row.PartitionKey, RowKey: row.RowKey})
	if err != nil {
		return err
	}
	var want map[string]any
	if found {
		x.rowFound, x.rowTS = true, r.Timestamp
		o := rowReader{opts: s.opts, blobs: s.blobs}.transform(r)
		isDoc := o.Disposition == transform.DispositionDoc || o.Disposition == transform.DispositionExpired
		if isDoc && (moved || o.Container == place.Container && o.Scope == place.Scope && o.ID == place.ID) {
			if x.exp, err = expectedOf(r, o); err != nil {
				return err
			}
			x.expects = true
			if !x.exp.expired {
				if want, err = transform.DecodeDoc(o.DocJSON); err != nil {
					return fmt.Errorf("expected doc %s: %w", x.exp.ref, err)
				}
			}
		}
	}
	raw, found, err := s.v.Docs.Read(ctx, place.Container, place.Scope, place.ID)
	if err != nil {
		return err
	}
	if found {
		if x.act, err = (&docIndex{blobs: s.blobs}).entry(place.Container, raw); err != nil {
			return err
		}
		x.docFound = true
		if x.expects && !x.exp.expired {
			x.fields = problems(&x.exp, &x.act)
		}
	}
	it.now = x
	it.got = settle(it.kind, moved, x, s.opts.Started)
	if (it.got == stands && it.kind == findingDifferent || it.got == nowDifferent) && want != nil && found {
		got, err := transform.DecodeDoc(raw)
		if err != nil {
			return fmt.Errorf("doc %s/%s/%s: %w", place.Container, place.Scope, place.ID, err)
		}
		it.diffs = append(compareDocs(row.Table, want, got), x.fields...)
	}
	return nil
}

// problems are the ttl and blob problems of doc a against e (a doc
// without the ttl its row's doc has is counted apart, not a problem).
func problems(e *expectedDoc, a *actualDoc) []fieldDiff {
	var fields []fieldDiff
	if !(e.wantTTL && !a.ttl.present) {
		if ttl := checkTTL(e, a); ttl != nil {
			fields = append(fields, *ttl)
		}
	}
	for _, b := range a.blobIssues {
		p := rawJSON(b.path)
		fields = append(fields, fieldDiff{b.field, ProblemBlob, p, p})
	}
	return fields
}

// recheck reads again up to MaxRecheck of the findings of r — jobs (the
// first differing docs, in row order), missing (every missing doc, in
// row order) and r's orphans, in that order — settles them and updates
// r's counts and lists; the field paths of the first MaxDetailedDocs
// docs that still differ come from what was read. counts are the counts
// per table and kind that r was filled from.
func (s *state) recheck(ctx context.Context, r *Report, counts *rowIndex, jobs []detailJob, missing []expectedDoc) error {
	nJobs := min(len(jobs), MaxRecheck)
	nMissing := min(len(missing), MaxRecheck-nJobs)
	nOrphans := min(len(r.Orphans), MaxRecheck-nJobs-nMissing)
	items := make([]*recheckItem, 0, nJobs+nMissing+nOrphans)
	for _, j := range jobs[:nJobs] {
		items = append(items, &recheckItem{kind: findingDifferent, job: j})
	}
	for _, e := range missing[:nMissing] {
		items = append(items, &recheckItem{kind: findingMissing, exp: e})
	}
	for _, o := range r.Orphans[:nOrphans] {
		items = append(items, &recheckItem{kind: findingOrphan, orphan: o})
	}
	r.NotReread = r.Totals.Different - nJobs + len(missing) - nMissing + len(r.Orphans) - nOrphans
	if len(items) > 0 {
		s.v.Progress.Step(fmt.Sprintf("reading %d finding(s) again", len(items)))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(recheckConcurrency)
	for _, it := range items {
		g.Go(func() error { return s.reread(gctx, it) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var stillMissing []seqRef
	var differing []seqDiffs
	orphans := r.Orphans[nOrphans:]
	r.Orphans = nil
	for _, it := range items {
		switch it.kind {
		case findingDifferent:
			c := &counts.kinds[it.job.exp.kind]
			c.Different--
			switch it.got {
			case agrees:
				c.Matched++
			case inFlight:
				c.ChangedWhileRunning++
				r.noteInFlight(it.job.exp.ref)
			case nowMissing:
				c.Missing++
				stillMissing = append(stillMissing, seqRef{it.job.exp.seq, it.job.exp.ref})
			default:
				c.Different++
				differing = append(differing, seqDiffs{it.job.exp.seq, it.differences()})
			}
		case findingMissing:
			c := &counts.kinds[it.exp.kind]
			c.Missing--
			switch it.got {
			case agrees:
				c.Matched++
			case inFlight:
				c.ChangedWhileRunning++
				r.noteInFlight(it.exp.ref)
			case nowDifferent:
				c.Different++
				it.job = detailJob{exp: it.exp, act: it.now.act}
				differing = append(differing, seqDiffs{it.exp.seq, it.differences()})
			default:
				c.Missing++
				stillMissing = append(stillMissing, seqRef{it.exp.seq, it.exp.ref})
			}
		case findingOrphan:
			c := &counts.kinds[counts.kind(it.orphan.Table, transform.Kind(it.orphan.RowKey))]
			switch it.got {
			case agrees:
				c.Orphans--
			case inFlight:
				c.Orphans--
				c.ChangedWhileRunning++
				r.noteInFlight(it.orphan.DocRef)
			default:
				r.Orphans = append(r.Orphans, it.orphan)
			}
		}
	}
	// The findings not read again stand as the join found them.
	for _, e := range missing[nMissing:] {
		stillMissing = append(stillMissing, seqRef{e.seq, e.ref})
	}
	r.Orphans = append(r.Orphans, orphans...)
	slices.SortFunc(stillMissing, func(a, b seqRef) int { return cmp.Compare(a.seq, b.seq) })
	r.Missing = r.Missing[:0]
	for _, m := range stillMissing {
		r.Missing = append(r.Missing, m.ref)
	}
	sortOrphans(r.Orphans)
	slices.SortFunc(differing, func(a, b seqDiffs) int { return cmp.Compare(a.seq, b.seq) })
	for _, d := range differing[:min(len(differing), MaxDetailedDocs)] {
		r.Differences = append(r.Differences, d.diffs...)
	}
	counts.fillCounts(r)
	r.DetailsTruncated = r.Totals.Different > min(len(differing), MaxDetailedDocs)
	return nil
}

// seqDiffs are a differing doc's field paths and its row's read order.
type seqDiffs struct {
	seq   uint64
	diffs []Difference
}

// differences are the differing fields of a doc that differs now, tied
// to it.
func (it *recheckItem) differences() []Difference {
	e, a := it.job.exp, it.now.act
	if it.kind == findingDifferent && !it.now.docFound {
		a = it.job.act
	}
	var actualRef *DocRef
	if it.job.moved {
		ref := a.ref
		actualRef = &ref
	}
	fields := it.diffs
	if len(fields) == 0 {
		// Nothing to compare now: what the join found.
		fields = it.job.fields
	}
	out := make([]Difference, 0, max(1, len(fields)))
	for _, f := range fields {
		out = append(out, Difference{Doc: e.ref, ActualDoc: actualRef, Path: f.path, Problem: f.problem, Expected: f.expected, Actual: f.actual})
	}
	if len(out) == 0 {
		out = append(out, Difference{Doc: e.ref, ActualDoc: actualRef, Path: "", Problem: it.now.why()})
	}
	return out
}

// why says, for a doc that stands different without a field to name,
// what the second read found.
func (x *reread) why() string {
	switch {
	case !x.rowFound:
		return ProblemRowGone
	case !x.expects:
		return ProblemRowElsewhere
	case !x.docFound:
		return ProblemDocGone
	}
	return ProblemChanged
}

// noteInFlight lists ref among the docs changed while verify ran (the
// first MaxDetailedDocs).
func (r *Report) noteInFlight(ref DocRef) {
	if len(r.ChangedWhileRunning) < MaxDetailedDocs {
		r.ChangedWhileRunning = append(r.ChangedWhileRunning, ref)
	}
}
