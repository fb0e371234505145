package ui

import (
	"time"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// tally is what Progress knows of an engine's work: its tables (or
// containers) in the order they were heard of, and what became of their
// rows. It is plain data; Progress guards it.
type tally struct {
	tables map[string]*tableTally
	order  []string
	// current is the table last advanced.
	current string
	// counting says that a pre-count announced the tables (Counting):
	// their totals are on their way.
	counting bool
	// written, dead and conflicts add up the outcomes.
	written, dead, conflicts int64
	// session counts the rows advanced by this process (not a resumed
	// run's earlier ones); began is when this process first read or
	// advanced a row: the session's rate is session over the time since.
	session int64
	began   time.Time
}

// tableTally is what the tally knows of one table.
type tableTally struct {
	// total is the pre-count (-1: unknown); done the rows with their
	// final outcome, a resumed run's earlier ones included; resumed those
	// of earlier sessions; read the rows this process read.
	total, done, resumed, read int64
	finished                   bool
	// began is when this process first heard of the table, for its rate.
	began time.Time
}

func newTally() tally { return tally{tables: map[string]*tableTally{}} }

// newPass forgets the tables, for a pass of --follow that reads its
// window from the start; the outcomes and the session's rows go on.
func (t *tally) newPass() {
	t.tables, t.order, t.current, t.counting = map[string]*tableTally{}, nil, "", false
}

// table returns the table name, heard of now when it is new.
func (t *tally) table(name string, now time.Time) *tableTally {
	tt, ok := t.tables[name]
	if !ok {
		tt = &tableTally{total: -1, began: now}
		t.tables[name] = tt
		t.order = append(t.order, name)
	}
	return tt
}

// working records that rows moved at now: the session's clock starts.
func (t *tally) working(now time.Time) {
	if t.began.IsZero() {
		t.began = now
	}
}

// outcome adds o.
func (t *tally) outcome(o migrate.Outcome) {
	t.written += o.Written
	t.dead += o.DeadLetters
	t.conflicts += o.Conflicts
}

// finish records that table is done.
func (t *tally) finish(name string, now time.Time) {
	t.table(name, now).finished = true
}

// size is the total a display shows for tt: what was done once it is
// finished (a table that shrank or grew since its pre-count), else the
// pre-count, but never less than what was done; -1 while unknown. So a
// table's percentage never passes 100 and the total over every table
// only grows with what is done.
func (tt *tableTally) size() int64 {
	switch {
	case tt.finished:
		return tt.done
	case tt.total < 0:
		return -1
	}
	return max(tt.total, tt.done)
}

// currentTable is the table a display is about: the one advanced last
// while it is not finished, else the first one not finished, else the
// last one heard of; "" before any.
func (t *tally) currentTable() string {
	if tt, ok := t.tables[t.current]; ok && !tt.finished {
		return t.current
	}
	for _, name := range t.order {
		if !t.tables[name].finished {
			return name
		}
	}
	if len(t.order) == 0 {
		return ""
	}
	return t.order[len(t.order)-1]
}

// all returns the rows done over every table and their total: -1 until
// every table's size is known (its pre-count arrived, or it finished), so
// that a percentage over all of them is never shown on part of them. A
// finished table counts as done with its count when it ended with fewer
// rows (rows deleted meanwhile): the total and the percentage over every
// table never fall.
func (t *tally) all() (done, total int64) {
	for _, name := range t.order {
		tt := t.tables[name]
		s, d := tt.size(), tt.done
		if tt.finished {
			s = max(tt.total, tt.done)
			d = s
		}
		done += d
		if s >= 0 && total >= 0 {
			total += s
		} else {
			total = -1
		}
	}
	return done, total
}

// eta is the time left for the rows not yet done at this session's mean
// rate, at now; ok is false while the total over every table is unknown
// or nothing was done yet.
func (t *tally) eta(now time.Time) (left time.Duration, ok bool) {
	done, total := t.all()
	secs := now.Sub(t.began).Seconds()
	if total < 0 || t.session == 0 || t.began.IsZero() || secs <= 0 {
		return 0, false
	}
	rate := float64(t.session) / secs
	return time.Duration(float64(total-done) / rate * float64(time.Second)), true
}

// rate is table tt's rows per second in this session, at now.
func (tt *tableTally) rate(now time.Time) float64 {
	if secs := now.Sub(tt.began).Seconds(); secs > 0 {
		return float64(tt.done-tt.resumed) / secs
	}
	return 0
}
