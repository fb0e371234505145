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
