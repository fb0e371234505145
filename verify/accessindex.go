package verify

import (
	"github.com/bifrost/bifrost-migrate/internal/spill"
	"github.com/bifrost/bifrost-migrate/transform"
)

// MaxAccessRows is how many dangling and how many stale index rows the
// report lists (SPEC §12: up to 1,000 of each); the counts are always
// exact. Unindexed executions are listed up to ShownDifferences.
const MaxAccessRows = 1000

// accessIndex is the state of the access-pattern check while the tables
// stream by, in memory that does not grow with them: every execution of
// Entities (by its ids, and in read order) and every dropped index row of
// Relationships (by the execution id it names) go to sorters; result
// then joins them by execution id, judging each index row
// (classifyIndex: dangling or stale) and noting which executions have a
// userexec or workflowexec row, and then goes through the executions in
// read order with those notes (classifyUnindexed). Every row is seen,
// sampled or not: the facts and the notes need all of them, and only
// sampled index rows and executions are judged. One goroutine builds it.
type accessIndex struct {
	// checked: both Entities and Relationships are read; else nothing is
	// judged.
	checked bool
	// ids holds every execution id taken: the first row of an id keeps
	// it (its ExecutionId property and the id in its RowKey, as run's
	// dangling check does); a later execution row whose id is taken is
	// not judged, since no index row can tell the two apart.
	ids *spill.KeySet
	// byID has an execution's facts under each of its ids; index its
	// index rows by the id they name; execs its facts in read order;
	// notes, once result joins, the index rows an execution has.
	byID, index, execs, notes *spill.Sorter
	rec                       recWriter
	// kept counts the executions kept.
	kept int
}

func newAccessIndex(checked bool, w *work) *accessIndex {
	a := &accessIndex{checked: checked}
	if checked {
		z := w.z
		a.ids = w.keySet("execids", z.execMemoryKeys, z.execFilterBytes)
		a.byID, a.index, a.execs, a.notes = w.sorter("execbyid"), w.sorter("index"), w.sorter("execs"), w.sorter("notes")
	}
	return a
}

// execRecord is an execution's facts on their way through the sorters.
type execRecord struct {
	id      string
	seq     uint64
	facts   execFacts
	sampled bool
}

func (w *recWriter) execRecord(byID string, e *execRecord) {
	w.reset()
	if byID != "" {
		w.key(byID)
	}
	w.seq(e.seq)
	w.str(e.id)
	for _, o := range []optString{e.facts.executedBy, e.facts.workflowName, e.facts.formID, e.facts.status} {
		w.bool(o.ok)
		w.str(o.s)
	}
	w.str(e.facts.scope)
	w.bool(e.facts.migrated)
	w.bool(e.sampled)
}

func (r *recReader) execRecord(byID bool) execRecord {
	if byID {
		r.key()
	}
	e := execRecord{seq: r.seq(), id: r.str()}
	for _, o := range []*optString{&e.facts.executedBy, &e.facts.workflowName, &e.facts.formID, &e.facts.status} {
		o.ok = r.bool()
		o.s = r.str()
	}
	e.facts.scope = r.str()
	e.facts.migrated = r.bool()
	e.sampled = r.bool()
	return e
}

// addExecution records an Entities execution row, the seq-th in read
// order, its outcome o after collisions, and whether it is in the
// sample. It fails when a sorter or the id set cannot write its runs.
func (a *accessIndex) addExecution(row transform.Row, seq uint64, o transform.Outcome, sampled bool) error {
	if !a.checked {
		return nil
	}
	id := transform.ExecutionID(row)
	if id == "" {
		return nil // no id at all: no index row can name it, and run dead-letters it
	}
	added, err := a.ids.Add(transform.BlobKey(id))
	if err != nil || !added {
		return err
	}
	a.kept++
	e := execRecord{id: id, seq: seq, facts: factsOf(row, o), sampled: sampled}
	a.rec.execRecord("", &e)
	if err := a.execs.Add(a.rec.b); err != nil {
		return err
	}
	names := []string{id}
	if prop, fromKey := transform.ExecutionIDs(row); prop != fromKey {
		for _, other := range []string{prop, fromKey} {
			if other == "" || other == id {
				continue
			}
			added, err := a.ids.Add(transform.BlobKey(other))
			if err != nil {
				return err
			}
			if added {
				names = append(names, other)
			}
		}
	}
	for _, name := range names {
		a.rec.execRecord(name, &e)
		if err := a.byID.Add(a.rec.b); err != nil {
			return err
		}
	}
	return nil
}

// addIndex records a dropped index row of Relationships, the seq-th in
// read order, and whether it is sampled. It fails when a sorter cannot
// write its runs.
func (a *accessIndex) addIndex(row transform.Row, seq uint64, sampled bool) error {
	if !a.checked {
		return nil
	}
	ix, ok := transform.ParseIndex(row.RowKey)
	if !ok {
		return nil // not a dropped index (transform keeps malformed ones)
	}
	a.rec.reset()
	a.rec.key(ix.ExecutionID)
	a.rec.seq(seq)
	a.rec.str(row.RowKey)
	a.rec.bool(sampled)
	return a.index.Add(a.rec.b)
}

// indexFinding is the findings of one index row, and its read order.
type indexFinding struct {
	seq uint64
	fs  []Finding
}

// result returns what the check found: the dangling and stale rows,
// counted and the first MaxAccessRows of each listed in read order, and
// the sampled executions judged now that every index row is known, the
// first ShownDifferences of them listed; and the number of sampled
// dangling rows (run's dangling-index warning). It fails when a sorter
// cannot read or write its runs.
func (a *accessIndex) result(w *work) (AccessPatterns, int, error) {
	r := AccessPatterns{Checked: a.checked, Findings: []Finding{}}
	if !a.checked {
		return r, 0, nil
	}
	listed := [2]*firstN[indexFinding]{}
	for k := range listed {
		listed[k] = newFirstN(MaxAccessRows, func(f indexFinding) uint64 { return f.seq })
	}
	byID, index := newStream(a.byID), newStream(a.index)
	var g []byte
	for {
		var ok bool
		if g, ok = minGroup(g, 1, byID, index); !ok {
			break
		}
		var exec *execRecord
		if rec := byID.next(g, 1); rec != nil {
			rr := recReader{b: rec}
			e := rr.execRecord(true)
			if rr.err != nil {
				return r, 0, rr.err
			}
			exec = &e
		}
		for rec := index.next(g, 1); rec != nil; rec = index.next(g, 1) {
			rr := recReader{b: rec}
			rr.key()
			seq, rowKey, sampled := rr.seq(), rr.str(), rr.bool()
			if rr.err != nil {
				return r, 0, rr.err
			}
			fs, err := a.judgeIndex(seq, rowKey, sampled, exec)
			if err != nil {
				return r, 0, err
			}
			if len(fs) == 0 {
				continue
			}
			k := 0
			if fs[0].Kind == FindingStale {
				k = 1
				r.Stale++
			} else {
				r.Dangling++
			}
			listed[k].add(indexFinding{seq, fs})
		}
	}
	if err := firstErr(byID, index); err != nil {
		return r, 0, err
	}
	for _, l := range listed {
		for _, f := range l.sorted() {
			r.Findings = append(r.Findings, f.fs...)
		}
	}
	if err := a.unindexed(&r); err != nil {
		return r, 0, err
	}
	return r, r.Dangling, nil
}

// The notes an index row leaves on its execution.
const (
	noteUserexec     = 1
	noteWorkflowexec = 2
)

// judgeIndex notes what index row rowKey says of its execution exec (nil:
// none has its id) and, when the row is sampled, judges it.
func (a *accessIndex) judgeIndex(seq uint64, rowKey string, sampled bool, exec *execRecord) ([]Finding, error) {
	ix, _ := transform.ParseIndex(rowKey)
	if exec != nil {
		var note uint64
		switch ix.Kind {
		case "userexec":
			note = noteUserexec
		case "workflowexec":
			note = noteWorkflowexec
		}
		if note != 0 {
			a.rec.reset()
			a.rec.seq(exec.seq)
			a.rec.uvarint(note)
			if err := a.notes.Add(a.rec.b); err != nil {
				return nil, err
			}
		}
	}
	if !sampled {
		return nil, nil
	}
	if exec == nil {
		return classifyIndex(rowKey, ix, nil), nil
	}
	return classifyIndex(rowKey, ix, &exec.facts), nil
}

// unindexed goes through the executions in read order with the notes of
// their index rows, counting the sampled ones that are unindexed and
// listing the first ShownDifferences.
func (a *accessIndex) unindexed(r *AccessPatterns) error {
	execs, notes := newStream(a.execs), newStream(a.notes)
	for execs.ok {
		rr := recReader{b: execs.cur}
		e := rr.execRecord(false)
		if rr.err != nil {
			return rr.err
		}
		execs.advance()
		var has uint64
		for notes.ok {
			nr := recReader{b: notes.cur}
			seq := nr.seq()
			if seq > e.seq {
				break
			}
			if seq == e.seq {
				has |= nr.uvarint()
			}
			notes.advance()
		}
		if !e.sampled {
			continue
		}
		fs := classifyUnindexed(e.id, e.facts, has&noteUserexec != 0, has&noteWorkflowexec != 0)
		if len(fs) == 0 {
			continue
		}
		if r.Unindexed < ShownDifferences {
			r.Findings = append(r.Findings, fs...)
		}
		r.Unindexed++
	}
	return firstErr(execs, notes)
}
