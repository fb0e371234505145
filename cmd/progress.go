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
// A table's bar appears once its total (the keys-only pre-count, which
// runs alongside) is known: progressbar's unknown-length mode cannot count
// past its width. Status messages are printed above the live bar. It is
// safe for concurrent use.
type barProgress struct {
	w io.Writer

	mu     sync.Mutex
	totals map[string]int64
	done   map[string]int64 // rows done before the bar appeared
	bars   map[string]*progressbar.ProgressBar
	live   *progressbar.ProgressBar
}

func newBarProgress(w io.Writer) *barProgress {
	return &barProgress{w: w, totals: map[string]int64{}, done: map[string]int64{}, bars: map[string]*progressbar.ProgressBar{}}
}

// show creates table's bar with max rows, at the rows done so far (the
// caller holds mu).
func (p *barProgress) show(table string, max int64) *progressbar.ProgressBar {
	b := progressbar.NewOptions64(max,
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
	if n := p.done[table]; n > 0 {
		p.add(b, n)
	}
	return b
}

// add advances b by n, raising its max first when the table grew since
// the pre-count (the caller holds mu).
func (p *barProgress) add(b *progressbar.ProgressBar, n int64) {
	if cur := b.State().CurrentNum; cur+n > b.GetMax64() {
		b.ChangeMax64(cur + n + 1) // set exactly by TableDone
	}
	_ = b.Add64(n)
}

func (p *barProgress) Total(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.totals[table] = n
	if _, ok := p.bars[table]; !ok && p.done[table] > 0 {
		p.show(table, n)
	}
}

func (p *barProgress) Advance(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.bars[table]; ok {
		p.add(b, n)
		return
	}
	p.done[table] += n
	if total, ok := p.totals[table]; ok {
		p.show(table, total)
	}
}

func (p *barProgress) TableDone(table string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.bars[table]
	if !ok {
		// Done before its total was known: a bar of what was done.
		b = p.show(table, p.done[table])
	}
	if cur := b.State().CurrentNum; cur != b.GetMax64() {
		b.ChangeMax64(cur) // finishes it at what was done
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
