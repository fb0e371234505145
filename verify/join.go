package verify

import (
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/bifrost/bifrost-migrate/transform"
)

// detailJob is a differing doc whose field paths must be computed by
// reading it (and its row) again.
type detailJob struct {
	exp    int // index into rowIndex.expected
	act    int // index into docIndex.actual; -1: nothing to read
	moved  bool
	fields []fieldDiff // ttl and blob problems, known without reading
}

// join compares the row index with the doc index (SPEC §12): every
// expected doc is matched, missing or different (found elsewhere through
// its _migration: moved); every doc no row took is application-written,
// not judged (outside the selection or the sample) or an orphan. It
// returns the report's counts and lists, and the differing docs whose
// field paths must be read again. tables and sample are the selection. It
// changes neither index: it is pure.
func join(rows *rowIndex, docs *docIndex, tables []string, sample float64) (*Report, []detailJob) {
	r := &Report{
		AppWritten:     map[string]int{},
		DocsWithoutTTL: map[string]int{},
		WithoutTTL:     []DocRef{},
		Docs:           docs.read,
		Warnings:       rows.warnings,
		AccessPatterns: rows.access.result(),
		Missing:        []DocRef{},
		DeadLetters:    rows.deadLetters,
		Orphans:        []Orphan{},
		Differences:    []Difference{},
	}
	for _, c := range containers {
		r.AppWritten[c], r.DocsWithoutTTL[c] = 0, 0
	}
	// The counts start from the rows' and gain the orphans, in a copy.
	counts := &rowIndex{kinds: slices.Clone(rows.kinds), kindIndex: maps.Clone(rows.kindIndex), kindNames: slices.Clone(rows.kindNames)}
	consumed := make([]bool, len(docs.actual))
	var jobs []detailJob
	for ei := range rows.expected {
		e := &rows.expected[ei]
		c := &counts.kinds[e.kind]
		ai, found := docs.byKey[e.docKey]
		if e.expired {
			if found {
				consumed[ai] = true
				c.ExpiredPresent++
			}
			continue
		}
		moved := false
		if !found || consumed[ai] {
			ai, found = docs.bySrc[keyOf(e.ref.Table, e.ref.PartitionKey, e.ref.RowKey)]
			if !found || consumed[ai] {
				c.Missing++
				r.Missing = append(r.Missing, e.ref)
				continue
			}
			moved = true
		}
		a := &docs.actual[ai]
		consumed[ai] = true
		var fields []fieldDiff
		if e.wantTTL && !a.ttl.present {
			// Not written by the tool, which always sets ttl here: the
			// application's doc lives by the container's defaultTtl.
			r.DocsWithoutTTL[a.ref.Container]++
			if len(r.WithoutTTL) < MaxDetailedDocs {
				r.WithoutTTL = append(r.WithoutTTL, a.ref)
			}
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
			continue
		}
		c.Different++
		jobs = append(jobs, detailJob{exp: ei, act: ai, moved: moved, fields: fields})
		if same {
			jobs[len(jobs)-1].act = -1 // nothing to read: ttl or blob only
		}
	}
	for ai := range docs.actual {
		a := &docs.actual[ai]
		if consumed[ai] {
			continue
		}
		if !a.hasMig {
			r.AppWritten[a.ref.Container]++
			continue
		}
		if !slices.Contains(tables, a.ref.Table) || !sampledKey(a.src, sample) {
			r.NotJudged++
			continue
		}
		reason := "its row no longer exists"
		if d, ok := rows.seen[a.src]; ok {
			if d == transform.DispositionDoc {
				reason = "a second doc of a row whose doc is elsewhere"
			} else {
				reason = "its row's disposition is now " + string(d)
			}
		}
		counts.kinds[counts.kind(a.ref.Table, transform.Kind(a.ref.RowKey))].Orphans++
		r.Orphans = append(r.Orphans, Orphan{DocRef: a.ref, Reason: reason})
	}
	// Orphans in doc read order are not stable; report them by row keys.
	sort.Slice(r.Orphans, func(i, j int) bool {
		a, b := r.Orphans[i], r.Orphans[j]
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
	counts.fillCounts(r)
	return r, jobs
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
