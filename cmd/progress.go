package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// barProgress shows one progress bar per table on a terminal (stderr):
// rows done/total, rows/s and the ETA. Tables are migrated one after the
// other, so one bar is live at a time; a finished bar stays on its line.
// Status messages are printed above the live bar. It is safe for
// concurrent use.
type barProgress struct {
	w io.Writer

	mu     sync.Mutex
	totals map[string]int64
	bars   map[string]*progressbar.ProgressBar
	live   *progressbar.ProgressBar
}

func newBarProgress(w io.Writer) *barProgress {
	return &barProgress{w: w, totals: map[string]int64{}, bars: map[string]*progressbar.ProgressBar{}}
}

// bar returns table's bar, creating it (the caller holds mu).
func (p *barProgress) bar(table string) *progressbar.ProgressBar {
	if b, ok := p.bars[table]; ok {
		return b
	}
	total, ok := p.totals[table]
	if !ok {
		total = -1 // unknown until the pre-count arrives: a spinner
	}
	b := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("%-13s", table)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	)
	p.bars[table] = b
	p.live = b
	return b
}

func (p *barProgress) Total(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals[table] = n
	if b, ok := p.bars[table]; ok && !b.IsFinished() {
		b.ChangeMax64(n)
	}
}

func (p *barProgress) Advance(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar(table).Add64(n)
}

func (p *barProgress) TableDone(table string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.bar(table)
	if b.GetMax64() < 0 || b.State().CurrentNum != b.GetMax64() {
		// The table changed since the pre-count (or it never arrived):
		// the bar ends at what was done.
		b.ChangeMax64(b.State().CurrentNum)
	}
	_ = b.Finish()
	p.live = nil
}

func (p *barProgress) Message(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		_ = p.live.Clear()
	}
	fmt.Fprintln(p.w, msg)
}

// finish ends a bar left live by an interrupted run, so the next output
// starts on its own line.
func (p *barProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		fmt.Fprintln(p.w)
		p.live = nil
	}
}

// jsonProgress prints {"type":"progress",…} lines (--output json) at most
// once per interval per table, and always when a table is done. Messages
// go to the status writer as text. It is safe for concurrent use.
type jsonProgress struct {
	out, status io.Writer
	now         func() time.Time
	interval    time.Duration

	mu     sync.Mutex
	tables map[string]*jsonTable
}

type jsonTable struct {
	total   int64 // -1: unknown
	done    int64
	started time.Time
	printed time.Time
}

// progressLine is one {"type":"progress"} line.
type progressLine struct {
	Type          string  `json:"type"`
	Table         string  `json:"table"`
	Done          int64   `json:"done"`
	Total         *int64  `json:"total"` // null until the pre-count is known
	RowsPerSecond float64 `json:"rowsPerSecond"`
	Finished      bool    `json:"finished"`
}

func newJSONProgress(out, status io.Writer, now func() time.Time) *jsonProgress {
	return &jsonProgress{out: out, status: status, now: now, interval: time.Second, tables: map[string]*jsonTable{}}
}

func (p *jsonProgress) table(name string) *jsonTable {
	t, ok := p.tables[name]
	if !ok {
		t = &jsonTable{total: -1, started: p.now()}
		p.tables[name] = t
	}
	return t
}

func (p *jsonProgress) Total(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.table(table).total = n
}

func (p *jsonProgress) Advance(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.table(table)
	t.done += n
	if now := p.now(); now.Sub(t.printed) >= p.interval {
		p.print(table, t, false)
	}
}

func (p *jsonProgress) TableDone(table string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.print(table, p.table(table), true)
}

func (p *jsonProgress) Message(msg string) {
	if p.status != nil {
		fmt.Fprintln(p.status, msg)
	}
}

// print writes one line (the caller holds mu).
func (p *jsonProgress) print(table string, t *jsonTable, finished bool) {
	now := p.now()
	t.printed = now
	line := progressLine{Type: "progress", Table: table, Done: t.done, Finished: finished}
	if t.total >= 0 {
		total := t.total
		line.Total = &total
	}
	if secs := now.Sub(t.started).Seconds(); secs > 0 {
		line.RowsPerSecond = float64(t.done) / secs
	}
	_ = json.NewEncoder(p.out).Encode(line)
}

// statusProgress only prints status messages (no terminal, text output).
type statusProgress struct{ w io.Writer }

func (statusProgress) Total(string, int64)   {}
func (statusProgress) Advance(string, int64) {}
func (statusProgress) TableDone(string)      {}
func (p statusProgress) Message(msg string)  { fmt.Fprintln(p.w, msg) }

// fanOut sends every report to each of its Progress.
type fanOut []migrate.Progress

func (f fanOut) Total(table string, n int64) {
	for _, p := range f {
		p.Total(table, n)
	}
}

func (f fanOut) Advance(table string, n int64) {
	for _, p := range f {
		p.Advance(table, n)
	}
}

func (f fanOut) TableDone(table string) {
	for _, p := range f {
		p.TableDone(table)
	}
}

func (f fanOut) Message(msg string) {
	// One copy of a message is enough.
	if len(f) > 0 {
		f[0].Message(msg)
	}
}
