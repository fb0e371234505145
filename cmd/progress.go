package cmd

import (
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
	w  io.Writer
	ru ruRecent // nil: no RU to show

	mu     sync.Mutex
	totals map[string]int64
	done   map[string]int64 // rows done before the bar appeared
	bars   map[string]*progressbar.ProgressBar
	live   *progressbar.ProgressBar
}

func newBarProgress(w io.Writer, ru ruRecent) *barProgress {
	return &barProgress{w: w, ru: ru, totals: map[string]int64{}, done: map[string]int64{}, bars: map[string]*progressbar.ProgressBar{}}
}

// describe is a bar's description: the table, and the RU/s and throttled
// share of the last seconds when there are request units to show.
func (p *barProgress) describe(table string) string {
	if p.ru == nil {
		return fmt.Sprintf("%-13s", table)
	}
	f := p.ru()
	return fmt.Sprintf("%-13s %6.0f RU/s %4.1f%% 429 %4d in flight %4.0f ms", table, f.ruPerSecond, 100*f.throttledShare,
		f.inFlight, float64(f.latencyP50.Microseconds())/1000)
}

// show creates table's bar with max rows, at the rows done so far (the
// caller holds mu).
func (p *barProgress) show(table string, max int64) *progressbar.ProgressBar {
	b := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.describe(table)),
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
		p.add(table, b, n)
	}
	return b
}

// add advances table's bar b by n, raising its max first when the table
// grew since the pre-count, and refreshes the RU in its description (the
// caller holds mu).
func (p *barProgress) add(table string, b *progressbar.ProgressBar, n int64) {
	if cur := b.State().CurrentNum; cur+n > b.GetMax64() {
		b.ChangeMax64(cur + n + 1) // set exactly by TableDone
	}
	if p.ru != nil {
		b.Describe(p.describe(table))
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

// Resumed shows the rows done before as done.
func (p *barProgress) Resumed(table string, n int64) { p.Advance(table, n) }

func (p *barProgress) Advance(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.bars[table]; ok {
		p.add(table, b, n)
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

// jsonProgress prints tableProgress lines (--output json) at most once per
// interval per table, and always when a table is done. It is safe for
// concurrent use.
type jsonProgress struct {
	lines    *jsonLines
	now      func() time.Time
	interval time.Duration
	ru       ruRecent // nil: no RU fields

	mu     sync.Mutex
	tables map[string]*jsonTable
}

type jsonTable struct {
	total   int64 // -1: unknown
	done    int64
	resumed int64 // done by earlier invocations: not part of the rate
	started time.Time
	printed time.Time
}

func newJSONProgress(lines *jsonLines, now func() time.Time, ru ruRecent) *jsonProgress {
	return &jsonProgress{lines: lines, now: now, interval: time.Second, ru: ru, tables: map[string]*jsonTable{}}
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

func (p *jsonProgress) Resumed(table string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.table(table)
	t.done += n
	t.resumed += n
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

// print writes one line (the caller holds mu). A write error is kept by
// lines and returned by the summary's emit.
func (p *jsonProgress) print(table string, t *jsonTable, finished bool) {
	now := p.now()
	t.printed = now
	line := tableProgress{Table: table, Done: t.done, Finished: finished, ruNow: newRUNow(p.ru)}
	if t.total >= 0 {
		total := t.total
		line.Total = &total
	}
	if secs := now.Sub(t.started).Seconds(); secs > 0 {
		line.RowsPerSecond = float64(t.done-t.resumed) / secs
	}
	_ = p.lines.emit(lineProgress, line)
}

// counter is what a progress display shows of migrate.Progress: the rows
// of each table. Messages are the output's status lines (commandProgress).
type counter interface {
	Total(table string, n int64)
	Resumed(table string, n int64)
	Advance(table string, n int64)
	TableDone(table string)
}

// commandProgress is the migrate.Progress of run and replay: it sends the
// counts to every display (bars, JSON lines; none without a terminal in
// text mode) and the engine's messages to the command's status lines.
type commandProgress struct {
	displays []counter
	out      *output
}

func (p commandProgress) Total(table string, n int64) {
	for _, d := range p.displays {
		d.Total(table, n)
	}
}

func (p commandProgress) Resumed(table string, n int64) {
	for _, d := range p.displays {
		d.Resumed(table, n)
	}
}

func (p commandProgress) Advance(table string, n int64) {
	for _, d := range p.displays {
		d.Advance(table, n)
	}
}

func (p commandProgress) TableDone(table string) {
	for _, d := range p.displays {
		d.TableDone(table)
	}
}

// Message prints msg as a status line; none without an output (the
// passes of --follow).
func (p commandProgress) Message(msg string) {
	if p.out != nil {
		p.out.status("%s", msg)
	}
}

// Outcome passes o on to the displays that hear outcomes (the observer).
func (p commandProgress) Outcome(group string, o migrate.Outcome) {
	for _, d := range p.displays {
		if od, ok := d.(interface {
			Outcome(string, migrate.Outcome)
		}); ok {
			od.Outcome(group, o)
		}
	}
}

// ruRecent gives what progress shows of Cosmos DB: the RU/s and the share
// of requests answered 429 over the last seconds, the requests in flight
// and their median latency (ruFlags.recent).
type ruRecent func() liveFigures

// liveFigures are the figures of ruRecent.
type liveFigures struct {
	ruPerSecond, throttledShare float64
	inFlight                    int
	latencyP50                  time.Duration
}

// newProgress returns the progress of a table-by-table command (run,
// replay, reverse) reporting to o: bars on stderr when terminal says it
// is a terminal, tableProgress lines on stdout with --output json (both,
// when both apply), the engine's messages as status lines, and obs (the
// progress lines, metrics, samples) when it shows anything; with --quiet
// only obs, and nil without it. now is the clock of the rates; ru, when
// not nil, gives the request units to show. bars, when not nil, must be
// finished after the command; counted says whether the progress shows
// totals, which the command then pre-counts.
func newProgress(o *output, terminal bool, now func() time.Time, ru ruRecent, obs *observer) (p migrate.Progress, bars *barProgress, counted bool) {
	cp := commandProgress{out: o}
	if !o.quiet && terminal {
		bars = newBarProgress(o.errOut, ru)
		o.showBars(bars)
		cp.displays = append(cp.displays, bars)
	}
	if !o.quiet && o.json() {
		cp.displays = append(cp.displays, newJSONProgress(o.lines, now, ru))
	}
	counted = len(cp.displays) > 0 || obs.wantsTotals()
	if obs.shows() {
		cp.displays = append(cp.displays, obs)
	}
	if o.quiet && len(cp.displays) == 0 {
		return nil, nil, false
	}
	return cp, bars, counted
}
