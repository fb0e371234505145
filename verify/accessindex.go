package verify

import (
	"strings"

	"github.com/bifrost/bifrost-migrate/transform"
)

// MaxAccessRows is how many dangling and how many stale index rows the
// report lists (SPEC §12: up to 1,000 of each); the counts are always
// exact. Unindexed executions are listed up to ShownDifferences.
const MaxAccessRows = 1000

// interner keeps each distinct string once and names it by a uint32; 0
// is "no value". The values the access patterns query (users, workflows,
// forms, statuses, scopes) repeat across executions, so an execution's
// facts cost 4 bytes per field, not a string each.
type interner struct {
	ids  map[string]uint32
	strs []string
}

func newInterner() interner {
	return interner{ids: map[string]uint32{}, strs: []string{""}}
}

func (in *interner) id(v optString) uint32 {
	if !v.ok {
		return 0
	}
	if id, ok := in.ids[v.s]; ok {
		return id
	}
	// A clone: v.s may share memory with a whole page of rows.
	s := strings.Clone(v.s)
	id := uint32(len(in.strs))
	in.strs = append(in.strs, s)
	in.ids[s] = id
	return id
}

func (in *interner) value(id uint32) optString {
	if id == 0 {
		return optString{}
	}
	return optString{in.strs[id], true}
}

// execRecord is the compact facts of one execution (about 50 bytes, plus
// its id).
type execRecord struct {
	id                                              string
	executedBy, workflowName, formID, status, scope uint32
	migrated, sampled, hasUserexec, hasWorkflowexec bool
}

// accessIndex is the state of the access-pattern check while the tables
// stream by: the facts of every execution of Entities (read first, SPEC
// §10's read order), then each index row of Relationships judged as it is
// read (classifyIndex) and the flags it sets; once every row is read,
// result judges the executions (classifyUnindexed). Every row is seen,
// sampled or not: the facts and the flags need all of them, and only
// sampled index rows and executions are judged. It keeps no index row,
// only the first MaxAccessRows findings of each kind. One goroutine
// builds it.
type accessIndex struct {
	// checked: both Entities and Relationships are read; else nothing is
	// judged.
	checked bool
	strs    interner
	// byID finds an execution's record by either of its ids (its
	// ExecutionId property and the id in its RowKey, as run's dangling
	// check does). The first row of an id keeps it: a later execution row
	// with the same id (another partition) is not judged, since no index
	// row can tell the two apart.
	byID  map[string]uint32
	execs []execRecord

	dangling, stale int // index rows
	listed          [2][]Finding
	listedRows      [2]int
}

func newAccessIndex(checked bool) *accessIndex {
	return &accessIndex{checked: checked, strs: newInterner(), byID: map[string]uint32{}}
}

// addExecution records an Entities execution row, its outcome o after
// collisions, and whether it is in the sample.
func (a *accessIndex) addExecution(row transform.Row, o transform.Outcome, sampled bool) {
	if !a.checked {
		return
	}
	id := transform.ExecutionID(row)
	if id == "" {
		return // no id at all: no index row can name it, and run dead-letters it
	}
	if _, dup := a.byID[id]; dup {
		return
	}
	f := factsOf(row, o)
	i := uint32(len(a.execs))
	rec := execRecord{
		id:         strings.Clone(id),
		executedBy: a.strs.id(f.executedBy), workflowName: a.strs.id(f.workflowName), formID: a.strs.id(f.formID),
		status: a.strs.id(f.status), scope: a.strs.id(optString{f.scope, true}),
		migrated: f.migrated, sampled: sampled,
	}
	a.execs = append(a.execs, rec)
	a.byID[rec.id] = i
	if prop, fromKey := transform.ExecutionIDs(row); prop != fromKey {
		for _, other := range []string{prop, fromKey} {
			if _, dup := a.byID[other]; other != "" && !dup {
				a.byID[strings.Clone(other)] = i
			}
		}
	}
}

func (a *accessIndex) facts(r *execRecord) execFacts {
	return execFacts{
		executedBy: a.strs.value(r.executedBy), workflowName: a.strs.value(r.workflowName), formID: a.strs.value(r.formID),
		status: a.strs.value(r.status), scope: a.strs.value(r.scope).s, migrated: r.migrated,
	}
}

// addIndex records a dropped index row of Relationships: it sets its
// execution's userexec or workflowexec flag and, when the row is sampled,
// judges it. It returns the kind of the row's findings ("" for none).
func (a *accessIndex) addIndex(row transform.Row, sampled bool) FindingKind {
	if !a.checked {
		return ""
	}
	ix, ok := transform.ParseIndex(row.RowKey)
	if !ok {
		return "" // not a dropped index (transform keeps malformed ones)
	}
	var rec *execRecord
	if i, found := a.byID[ix.ExecutionID]; found {
		rec = &a.execs[i]
		switch ix.Kind {
		case "userexec":
			rec.hasUserexec = true
		case "workflowexec":
			rec.hasWorkflowexec = true
		}
	}
	if !sampled {
		return ""
	}
	var fs []Finding
	if rec == nil {
		fs = classifyIndex(row.RowKey, ix, nil)
	} else {
		f := a.facts(rec)
		fs = classifyIndex(row.RowKey, ix, &f)
	}
	if len(fs) == 0 {
		return ""
	}
	kind := fs[0].Kind
	k := 0
	if kind == FindingStale {
		a.stale++
		k = 1
	} else {
		a.dangling++
	}
	if a.listedRows[k] < MaxAccessRows {
		a.listedRows[k]++
		a.listed[k] = append(a.listed[k], detach(fs)...)
	}
	return kind
}

// detach copies the strings that a row's findings share with its page of
// rows, so that a listed finding does not keep the page in memory.
func detach(fs []Finding) []Finding {
	rk := strings.Clone(*fs[0].Index)
	for i := range fs {
		fs[i].Index = &rk
		fs[i].ExecutionID = strings.Clone(fs[i].ExecutionID)
		if fs[i].IndexValue != nil {
			v := strings.Clone(*fs[i].IndexValue)
			fs[i].IndexValue = &v
		}
	}
	return fs
}

// result returns what the check found: the dangling and stale rows
// counted and listed as they were read, and the sampled executions judged
// now that every index row is known, the first ShownDifferences of them
// listed. It changes nothing.
func (a *accessIndex) result() AccessPatterns {
	r := AccessPatterns{Checked: a.checked, Dangling: a.dangling, Stale: a.stale, Findings: []Finding{}}
	if !a.checked {
		return r
	}
	r.Findings = append(r.Findings, a.listed[0]...)
	r.Findings = append(r.Findings, a.listed[1]...)
	for i := range a.execs {
		rec := &a.execs[i]
		if !rec.sampled {
			continue
		}
		fs := classifyUnindexed(rec.id, a.facts(rec), rec.hasUserexec, rec.hasWorkflowexec)
		if len(fs) == 0 {
			continue
		}
		if r.Unindexed < ShownDifferences {
			r.Findings = append(r.Findings, fs...)
		}
		r.Unindexed++
	}
	return r
}
