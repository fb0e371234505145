package migrate

// Progress receives what an engine has done so far. The command decides
// how to show it (a bar, progress lines, JSON lines, metrics; the one
// implementation is internal/ui's Progress); the engine never writes to a
// terminal itself. Implementations must be safe for concurrent use: the
// totals come from a counting goroutine, the outcomes from the writes,
// while rows are being read.
type Progress interface {
	// Counting reports, before any Total, the tables (or containers)
	// whose rows a keys-only pre-count is counting: a total over all of
	// them is known once each has its Total.
	Counting(tables []string)
	// Total reports the number of rows of table, from a keys-only
	// pre-count. It may arrive before, during or after the table's rows.
	Total(table string, rows int64)
	// Resumed reports, once and before any Advance of table, the n rows
	// of table that earlier invocations of a resumed run did.
	Resumed(table string, n int64)
	// Read reports n more rows of table read from the source (docs of a
	// container for reverse), before anything is decided or written
	// about them: what moves first, long before a checkpoint.
	Read(table string, n int64)
	// Advance reports n more rows of table whose outcome is final
	// (written and acknowledged, or not to be written) and checkpointed.
	Advance(table string, n int64)
	// Outcome reports what became of some items of a group once they
	// are final: run reports each doc written as it is acknowledged and
	// the dead letters of a page at its checkpoint; replay and reverse
	// report per item, after Advance. An Outcome that counts nothing
	// may be skipped.
	Outcome(group string, o Outcome)
	// TableDone reports that every row of table has its final outcome.
	TableDone(table string)
	// Message reports a status line for people, e.g. that a run resumes.
	Message(msg string)
}

// Outcome is what became of some items of a group (a table for run and
// replay, a container for reverse) once they are final: the docs (run,
// replay) or rows (reverse) written, the dead letters recorded and the
// conflicts left.
type Outcome struct {
	Written, DeadLetters, Conflicts int64
}

// nopProgress is the Progress of an engine whose command shows none.
type nopProgress struct{}

func (nopProgress) Counting([]string)       {}
func (nopProgress) Total(string, int64)     {}
func (nopProgress) Resumed(string, int64)   {}
func (nopProgress) Read(string, int64)      {}
func (nopProgress) Advance(string, int64)   {}
func (nopProgress) Outcome(string, Outcome) {}
func (nopProgress) TableDone(string)        {}
func (nopProgress) Message(string)          {}
