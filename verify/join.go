package verify

import (
	"cmp"
	"container/heap"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/transform"
)

// The join (SPEC §12) is two merge joins over sorted streams, so that
// neither side is ever held whole (docs/design.md, "verify"):
//
//  1. by place (container, scope, id, in that order: a table partition
//     maps to one scope, so the join goes scope by scope, and a scope of
//     any size streams through): every expected doc meets the doc at its
//     place. The first row of a place (in read order) takes the doc there
//     and is judged against it; an expired row only notes it. A row that
//     finds no doc goes on, by its keys, to step 2, and so does a doc that
//     no row took, when its _migration names a row; a doc without
//     _migration that no row took is application-written.
//  2. by row (table, PartitionKey, RowKey): a row not found at its place
//     meets the docs whose _migration names it — the first of them (by
//     place) is its doc, found elsewhere (moved: different) — or is
//     missing; every other doc that names the row is an orphan, with a
//     reason from the row's disposition, or not judged when the row is
//     outside --tables or --sample.
//
// What the report lists is then put in row order (missing docs, docs
// without ttl, differing docs) or in the order of orphans' row keys, as
// a join in memory would list them.

// detailJob is a differing doc whose field paths must be computed by
// reading it (and its row) again when read is set; the ttl and blob
// problems are known without reading.
type detailJob struct {
	exp    expectedDoc
	act    actualDoc
	moved  bool
	read   bool
	fields []fieldDiff
}

// seqRef is a doc reference and the read order of its row.
type seqRef struct {
	seq uint64
	ref DocRef
}

// joiner is the state of one join: the report it fills, the counts per
// table and kind (a copy of the rows' that gains the orphans), the lists
// it keeps in row order, and the sorters of step 2.
type joiner struct {
	r          *Report
	counts     *rowIndex
	tables     []string
	sample     float64
	jobs       *firstN[detailJob]
	withoutTTL *firstN[seqRef]
	missing    []expectedDoc
	unplaced   *spill.Sorter
	free       *spill.Sorter
	rec        recWriter
	// manifest, when not nil, hears every doc read, in place order.
	manifest func(a *actualDoc) error

	// A --since (since.go) sets these: a changed row without a changed
	// doc at its place goes to unread (its doc is read), a changed doc
	// that no changed row takes to untaken (its row is read); isChanged
	// tells whether a row is a changed row.
	unread, untaken *spill.Sorter
	isChanged       func(key) (bool, error)
}

// joined is what the join found: the report with its counts and lists,
// the counts per table and kind it was filled from, the first differing
// docs in row order (to read again for their field paths) and every
// missing doc's expected doc in row order.
type joined struct {
	r       *Report
	counts  *rowIndex
	jobs    []detailJob
	missing []expectedDoc
	// rowsRead counts the rows read (sampled or not); docsJudged the
	// changed docs a --since judged; base is the start of the full verify
	// a --since built on (zero: none).
	rowsRead   int
	docsJudged int
	base       time.Time
}

// join compares the row index with the doc index: every expected doc is
// matched, missing or different (found elsewhere through its _migration:
// moved); every doc no row took is application-written, not judged
// (outside the selection or the sample) or an orphan. It keeps the first
// maxJobs differing docs in row order. tables and sample are the
// selection; w holds the sorters of the second step; manifest, when not
// nil, hears every doc read, in place order. It reads both indexes'
// sorters once: an index is used up by it. It returns an error when a
// sorter cannot read or write its runs.
func join(rows *rowIndex, docs *docIndex, w *work, tables []string, sample float64, maxJobs int, manifest func(*actualDoc) error) (joined, error) {
	j := newJoiner(rows, docs, w, tables, sample, maxJobs)
	j.manifest = manifest
	if err := j.byPlace(newStream(rows.exp), newStream(docs.act)); err != nil {
		return joined{}, err
	}
	if err := j.byRow(newStream(j.unplaced), newStream(j.free), newStream(rows.seen)); err != nil {
		return joined{}, err
	}
	return j.finish(), nil
}

// newJoiner returns the joiner of rows and docs (see join).
func newJoiner(rows *rowIndex, docs *docIndex, w *work, tables []string, sample float64, maxJobs int) *joiner {
	r := &Report{
		AppWritten:     map[string]int{},
		DocsWithoutTTL: map[string]int{},
		WithoutTTL:     []DocRef{},
		Docs:           docs.read,
		Warnings:       rows.warnings,
		Missing:        []DocRef{},
		DeadLetters:    rows.deadLetters,
		Orphans:        []Orphan{},
		Differences:    []Difference{},
	}
	for _, c := range containers {
		r.AppWritten[c], r.DocsWithoutTTL[c] = 0, 0
	}
	return &joiner{
		r:          r,
		counts:     &rowIndex{kinds: slices.Clone(rows.kinds), kindIndex: maps.Clone(rows.kindIndex), kindNames: slices.Clone(rows.kindNames)},
		tables:     tables,
		sample:     sample,
		jobs:       newFirstN(maxJobs, func(j detailJob) uint64 { return j.exp.seq }),
		withoutTTL: newFirstN(MaxDetailedDocs, func(s seqRef) uint64 { return s.seq }),
		unplaced:   w.sorter("unplaced"),
		free:       w.sorter("free"),
	}
}

// finish puts the lists in their order and fills the report's counts.
func (j *joiner) finish() joined {
	r := j.r
	slices.SortFunc(j.missing, func(a, b expectedDoc) int { return cmp.Compare(a.seq, b.seq) })
	for _, m := range j.missing {
		r.Missing = append(r.Missing, m.ref)
	}
	for _, s := range j.withoutTTL.sorted() {
		r.WithoutTTL = append(r.WithoutTTL, s.ref)
	}
	sortOrphans(r.Orphans)
	j.counts.fillCounts(r)
	return joined{r: r, counts: j.counts, jobs: j.jobs.sorted(), missing: j.missing}
}

// byPlace is step 1: the expected docs and the docs, both by place.
func (j *joiner) byPlace(exp, act *stream) error {
	var g []byte
	for {
		var ok bool
		if g, ok = minGroup(g, 3, exp, act); !ok {
			break
		}
		var es []expectedDoc
		for rec := exp.next(g, 3); rec != nil; rec = exp.next(g, 3) {
			rr := recReader{b: rec}
			es = append(es, rr.expected(false))
			if rr.err != nil {
				return rr.err
			}
		}
		var a *actualDoc
		for rec := act.next(g, 3); rec != nil; rec = act.next(g, 3) {
			if a != nil {
				continue // listed twice: kept once
			}
			rr := recReader{b: rec}
			v := rr.actual(false)
			if rr.err != nil {
				return rr.err
			}
			a = &v
		}
		if err := j.place(es, a); err != nil {
			return err
		}
	}
	return firstErr(exp, act)
}

// place judges the rows whose doc belongs at one place (es, in read
// order) against the doc there (a, nil when there is none).
func (j *joiner) place(es []expectedDoc, a *actualDoc) error {
	if a != nil && j.manifest != nil {
		if err := j.manifest(a); err != nil {
			return err
		}
	}
	taken := false
	for i := range es {
		e := &es[i]
		switch {
		case e.expired:
			if a != nil {
				taken = true
				j.counts.kinds[e.kind].ExpiredPresent++
			}
		case a != nil && !taken:
			taken = true
			if other, err := j.namesUnchangedRow(e, a); err != nil || other {
				if err != nil {
					return err
				}
				// The doc may be an unchanged row's that comes first:
				// read again with that row (since.go).
				j.rec.expected(e, false)
				if err := j.unread.Add(j.rec.b); err != nil {
					return err
				}
				continue
			}
			j.judge(e, a, false)
		case j.unread != nil:
			j.rec.expected(e, false)
			if err := j.unread.Add(j.rec.b); err != nil {
				return err
			}
		default:
			j.rec.expected(e, true)
			if err := j.unplaced.Add(j.rec.b); err != nil {
				return err
			}
		}
	}
	switch {
	case a == nil || taken:
	case j.untaken != nil:
		j.rec.actual(a, false)
		return j.untaken.Add(j.rec.b)
	case a.hasMig:
		j.rec.actual(a, true)
		return j.free.Add(j.rec.b)
	default:
		j.r.AppWritten[a.ref.Container]++
	}
	return nil
}

// namesUnchangedRow reports, in a --since, whether doc a at changed row
// e's place names in its _migration another row that did not change.
func (j *joiner) namesUnchangedRow(e *expectedDoc, a *actualDoc) (bool, error) {
	if j.isChanged == nil || !a.hasMig || a.src() == keyOf(e.ref.Table, e.ref.PartitionKey, e.ref.RowKey) {
		return false, nil
	}
	changed, err := j.isChanged(a.src())
	return !changed, err
}

// judge compares the doc a with the row's expected doc e: matched, or
// different (always, when a was found elsewhere: moved).
func (j *joiner) judge(e *expectedDoc, a *actualDoc, moved bool) {
	c := &j.counts.kinds[e.kind]
	var fields []fieldDiff
	if e.wantTTL && !a.ttl.present {
		// Not written by the tool, which always sets ttl here: the
		// application's doc lives by the container's defaultTtl.
		j.r.DocsWithoutTTL[a.ref.Container]++
		j.withoutTTL.add(seqRef{e.seq, a.ref})
	} else if ttl := checkTTL(e, a); ttl != nil {
		fields = append(fields, *ttl)
	}
	for _, b := range a.blobIssues {
		p := rawJSON(b.path)
		fields = append(fields, fieldDiff{b.field, ProblemBlob, p, p})
	}
	same := !moved && a.hasMig && a.docHash == e.docHash && a.migHash == e.migHash
	if same && len(fields) == 0 {
		c.Matched++
		return
	}
	c.Different++
	j.jobs.add(detailJob{exp: *e, act: *a, moved: moved, read: !same, fields: fields})
}

// byRow is step 2: the rows not found at their place, the docs no row
// took, and the dispositions of the selected rows, all by row. Only the
// keys of those rows and docs have anything to judge: the dispositions
// of other rows are passed over, and those after the last key not read.
func (j *joiner) byRow(unplaced, free, seen *stream) error {
	var g []byte
	for {
		var ok bool
		if g, ok = minGroup(g, 3, unplaced, free); !ok {
			break
		}
		seen.skipTo(g, 3)
		var us []expectedDoc
		for rec := unplaced.next(g, 3); rec != nil; rec = unplaced.next(g, 3) {
			rr := recReader{b: rec}
			us = append(us, rr.expected(true))
			if rr.err != nil {
				return rr.err
			}
		}
		var fs []actualDoc
		for rec := free.next(g, 3); rec != nil; rec = free.next(g, 3) {
			rr := recReader{b: rec}
			fs = append(fs, rr.actual(true))
			if rr.err != nil {
				return rr.err
			}
		}
		var row *seenRow
		for rec := seen.next(g, 3); rec != nil; rec = seen.next(g, 3) {
			rr := recReader{b: rec}
			s := rr.seen()
			if rr.err != nil {
				return rr.err
			}
			row = &s
		}
		j.row(us, fs, row)
	}
	return firstErr(unplaced, free, seen)
}

// row judges the rows of one row key not found at their place (us; one
// row, unless a table repeats a key) against the docs no row took whose
// _migration names it (fs, by place); seen is the row's disposition, nil
// when it is not a selected row.
func (j *joiner) row(us []expectedDoc, fs []actualDoc, seen *seenRow) {
	for i := range us {
		u := &us[i]
		if len(fs) > 0 {
			j.judge(u, &fs[0], true)
			fs = fs[1:]
			continue
		}
		j.counts.kinds[u.kind].Missing++
		j.missing = append(j.missing, *u)
	}
	for i := range fs {
		a := &fs[i]
		if !slices.Contains(j.tables, a.ref.Table) || !sampledKey(a.src(), j.sample) {
			j.r.NotJudged++
			continue
		}
		reason := "its row no longer exists"
		if seen != nil {
			if seen.disposition == transform.DispositionDoc {
				reason = "a second doc of a row whose doc is elsewhere"
			} else {
				reason = "its row's disposition is now " + string(seen.disposition)
			}
		}
		j.counts.kinds[j.counts.kind(a.ref.Table, transform.Kind(a.ref.RowKey))].Orphans++
		j.r.Orphans = append(j.r.Orphans, Orphan{DocRef: a.ref, Reason: reason})
	}
}

// sortOrphans puts orphans in the order of their row keys (tables in read
// order), then of their place.
func sortOrphans(os []Orphan) {
	sort.Slice(os, func(i, j int) bool {
		a, b := os[i], os[j]
		if a.Table != b.Table {
			return transform.TableOrder(a.Table) < transform.TableOrder(b.Table)
		}
		if a.PartitionKey != b.PartitionKey {
			return a.PartitionKey < b.PartitionKey
		}
		if a.RowKey != b.RowKey {
			return a.RowKey < b.RowKey
		}
		return a.Container+a.Scope+a.ID < b.Container+b.Scope+b.ID
	})
}

// fillCounts copies the per-kind counters into the report, tables in read
// order and kinds by name, and sums them.
func (x *rowIndex) fillCounts(r *Report) {
	order := make([]int, len(x.kinds))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := x.kindNames[order[i]], x.kindNames[order[j]]
		if a.table != b.table {
			return transform.TableOrder(a.table) < transform.TableOrder(b.table)
		}
		return a.kind < b.kind
	})
	r.Tables = make([]KindCounts, 0, len(order))
	r.Totals = Counts{}
	for _, i := range order {
		r.Tables = append(r.Tables, KindCounts{Table: x.kindNames[i].table, Kind: x.kindNames[i].kind, Counts: x.kinds[i]})
		r.Totals.add(x.kinds[i])
	}
	r.NotMigrated = r.Totals.DeadLetter
	r.OK = r.Failures() == 0
}

// checkTTL applies the relaxed ttl rule of SPEC §12 to a doc that has a
// ttl when the expected doc has one (join counts those without one): then
// 0 < ttl ≤ 1209600; and none when the expected doc has none.
func checkTTL(e *expectedDoc, a *actualDoc) *fieldDiff {
	switch {
	case e.wantTTL && !a.ttl.inRange:
		return &fieldDiff{"ttl", ProblemTTL, rawJSON(ttlRange), a.ttl.raw}
	case !e.wantTTL && a.ttl.present:
		return &fieldDiff{"ttl", ProblemUnexpected, nil, a.ttl.raw}
	}
	return nil
}

var ttlRange = "a number with 0 < ttl <= " + strconv.Itoa(transform.ExecutionRetention)

// firstN keeps the n items of smallest seq it is given: a max-heap of
// them, so that memory holds n items whatever the number added.
type firstN[T any] struct {
	n     int
	seq   func(T) uint64
	items []T
	added int
}

func newFirstN[T any](n int, seq func(T) uint64) *firstN[T] { return &firstN[T]{n: n, seq: seq} }

func (f *firstN[T]) Len() int           { return len(f.items) }
func (f *firstN[T]) Less(i, j int) bool { return f.seq(f.items[i]) > f.seq(f.items[j]) }
func (f *firstN[T]) Swap(i, j int)      { f.items[i], f.items[j] = f.items[j], f.items[i] }
func (f *firstN[T]) Push(x any)         { f.items = append(f.items, x.(T)) }
func (f *firstN[T]) Pop() any {
	x := f.items[len(f.items)-1]
	f.items = f.items[:len(f.items)-1]
	return x
}

// add adds x unless n items of smaller seq are kept.
func (f *firstN[T]) add(x T) {
	f.added++
	switch {
	case f.n <= 0:
	case len(f.items) < f.n:
		heap.Push(f, x)
	case f.seq(x) < f.seq(f.items[0]):
		f.items[0] = x
		heap.Fix(f, 0)
	}
}

// sorted returns the items kept, by seq.
func (f *firstN[T]) sorted() []T {
	out := slices.Clone(f.items)
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(f.seq(a), f.seq(b)) })
	return out
}
