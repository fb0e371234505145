package migrate

// Progress receives what a run has done so far. The command decides how to
// show it (bars, JSON lines, nothing); the pipeline never writes to a
// terminal itself. Implementations must be safe for concurrent use: the
// totals come from a counting goroutine while rows are being processed.
type Progress interface {
	// Total reports the number of rows of table, from a keys-only
	// pre-count. It may arrive before, during or after the table's rows.
	Total(table string, rows int64)
	// Resumed reports, once and before any Advance of table, the n rows
	// of table that earlier invocations of a resumed run did.
	Resumed(table string, n int64)
	// Advance reports n more rows of table whose outcome is final
	// (written and acknowledged, or not to be written) and checkpointed.
	Advance(table string, n int64)
	// TableDone reports that every row of table has its final outcome.
	TableDone(table string)
	// Message reports a status line for people, e.g. that a run resumes.
	Message(msg string)
}

// nopProgress is the Progress of a run that shows none.
type nopProgress struct{}

func (nopProgress) Total(string, int64)   {}
func (nopProgress) Resumed(string, int64) {}
func (nopProgress) Advance(string, int64) {}
func (nopProgress) TableDone(string)      {}
func (nopProgress) Message(string)        {}

// Outcome is what became of some items of a group (a table for run and
// replay, a container for reverse) once they are final: the docs (run,
// replay) or rows (reverse) written, the dead letters recorded and the
// conflicts left.
type Outcome struct {
	Written, DeadLetters, Conflicts int64
}

// OutcomeProgress is a Progress that also hears outcomes (metrics, the
// progress lines): run reports them per checkpointed page, replay and
// reverse per item, after Advance. Engines call Outcome only on a
// Progress that implements it.
type OutcomeProgress interface {
	Progress
	Outcome(group string, o Outcome)
}

// reportOutcome gives o to p when p hears outcomes and o counts anything.
func reportOutcome(p Progress, group string, o Outcome) {
	if op, ok := p.(OutcomeProgress); ok && o != (Outcome{}) {
		op.Outcome(group, o)
	}
}
