package ui

import (
	"fmt"
	"sync"
	"time"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// DefaultProgressInterval is the default of --progress-interval.
const DefaultProgressInterval = 10 * time.Second

// How often the displays that do not wait for --progress-interval act:
// the bar is drawn again every barEvery; run's throughput is sampled at
// least sampleEvery apart (it doubles as the file is thinned); a table's
// JSON progress line comes at most every jsonEvery as its rows advance.
const (
	barEvery    = 250 * time.Millisecond
	sampleEvery = time.Second
	jsonEvery   = time.Second
)

// Config is what a command chooses of its progress.
type Config struct {
	// Name is the command ("run"), before its lines; Words what it
	// reads and writes.
	Name  string
	Words Words
	// Out is the command's output: its status lines, its JSON lines,
	// stderr and the log.
	Out *Output
	// Stamp is the command's clock, which stamps the progress lines;
	// Clock the one rates and timers are measured with. Nil: time.Now.
	Stamp, Clock func() time.Time
	// Interval is --progress-interval (0: DefaultProgressInterval).
	Interval time.Duration
	// Terminal says that stderr is a terminal: a bar there, not lines;
	// Width gives its columns (nil or 0: 80).
	Terminal bool
	Width    func() int
	// Meters are the pacer and the flow whose figures are shown.
	Meters Meters
	// Metrics, when not nil, are served on MetricsAddr (--metrics-addr).
	Metrics     *Metrics
	MetricsAddr string
	// StateDir, when not empty, is where run's throughput samples go.
	StateDir string
}

// Progress is the one place an engine's progress goes: the engines report
// to it (it is a migrate.Progress, and verify's), it keeps the counts
// (tally), and it fans them out to the displays the command chose:
//
//   - a bar on stderr when it is a terminal, drawn again every barEvery
//     and kept as a line when its table is done;
//   - a timestamped progress line every --progress-interval, on stderr
//     when it is not a terminal (text output) and in --log-file;
//   - TableProgress lines on stdout with --output json, as rows advance
//     and at each interval;
//   - the metrics (--metrics-addr) and run's throughput samples.
//
// The displays show something from the first interval, whatever the
// rate: rows read, writes in flight, RU/s, before any checkpoint. With
// --quiet only the log, the metrics and the samples remain. Its methods
// are safe for concurrent use; Finish must be called once the command is
// done with it.
type Progress struct {
	name         string
	words        Words
	out          *Output
	stamp, clock func() time.Time
	interval     time.Duration
	width        func() int
	meters       Meters
	// lines, bar and json are the displays chosen.
	lines, bar, json bool
	metrics          *Metrics
	server           *metricsServer
	// samples, when not nil, records run's throughput in stateDir.
	samples  *migrate.SampleLog
	stateDir string
	atWork   func()

	mu sync.Mutex
	t  tally
	// active: the command is at work and lines are printed (between
	// two passes of --follow it is not); following: the passes of
	// --follow, which show no bar and no JSON progress lines (a pass
	// line ends each).
	active, following bool
	phase             string
	phaseAt           time.Time
	line, sample      mark // what the last line and the last sample saw
	runID             string
	sampling          bool // the samples file can be written (a failure stops it)
	jsonAt            map[string]time.Time

	stop, done chan struct{}
	finish     sync.Once
}

// mark is what Progress had seen at a line or a sample, for the rates
// since.
type mark struct {
	at   time.Time
	rows int64
	// items are the writes the flow saw end: docs as they are written.
	items     int64
	ru        float64
	requests  int64
	throttled int64
}

// Start starts the progress of a command as c says: the metrics server
// when there are metrics (its address said in a status line, even with
// --quiet: it was asked for), and the timers of the displays. It returns
// a *ListenError when it cannot listen on c.MetricsAddr.
func Start(c Config) (*Progress, error) {
	o := c.Out
	p := &Progress{
		name: c.Name, words: c.Words, out: o, stamp: c.Stamp, clock: c.Clock, interval: c.Interval, width: c.Width, meters: c.Meters,
		lines:   !c.Terminal && !o.JSON() && !o.Quiet(),
		bar:     c.Terminal && !o.Quiet(),
		json:    o.JSON() && !o.Quiet(),
		metrics: c.Metrics, stateDir: c.StateDir, atWork: func() {},
		t: newTally(), active: true, jsonAt: map[string]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if p.stamp == nil {
		p.stamp = time.Now
	}
	if p.clock == nil {
		p.clock = time.Now
	}
	if p.interval <= 0 {
		p.interval = DefaultProgressInterval
	}
	if p.width == nil {
		p.width = func() int { return 0 }
	}
	if c.StateDir != "" {
		p.samples, p.sampling = migrate.NewSampleLog(c.StateDir, sampleEvery), true
	}
	if p.metrics != nil {
		p.metrics.watch(c.Meters)
		s, err := serveMetrics(c.MetricsAddr, p.metrics)
		if err != nil {
			return nil, err
		}
		p.server = s
		o.say(LineStatus, fmt.Sprintf("metrics on http://%s/metrics, health on http://%s/healthz", s.addr, s.addr))
	}
	now := p.clock()
	p.line.at, p.sample.at, p.phaseAt = now, now, now
	go p.tick()
	return p, nil
}

// OnWork makes the first report of the engine (any of its calls) call
// fn, first: what a command says only once its engine is at work. It must
// be called before the engine starts.
func (p *Progress) OnWork(fn func()) { p.atWork = sync.OnceFunc(fn) }

// WantsTotals reports whether a display shows totals (and an ETA), which
// the engine then pre-counts.
func (p *Progress) WantsTotals() bool {
	return p.lines || p.bar || p.json || p.out.Log() != nil
}

// tick runs the timers of the displays until Finish.
func (p *Progress) tick() {
	defer close(p.done)
	lines := time.NewTicker(p.interval)
	defer lines.Stop()
	var bar <-chan time.Time
	if p.bar {
		t := time.NewTicker(barEvery)
		defer t.Stop()
		bar = t.C
	}
	every := sampleEvery
	samples := time.NewTicker(every)
	defer samples.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-lines.C:
			p.printLine()
		case <-bar:
			p.drawBar()
		case <-samples.C:
			if p.takeSample(false) && p.samples.Every != every {
				every = p.samples.Every
				samples.Reset(every)
			}
		}
	}
}

// Finish stops the displays: the bar stays as the last line, run's last
// sample is taken (so that the charts reach the end of the session) and
// the metrics server stops. Later calls do nothing.
func (p *Progress) Finish() {
	p.finish.Do(func() {
		close(p.stop)
		<-p.done
		if p.bar {
			p.drawBar()
			p.out.screen.keep("")
		}
		p.takeSample(true)
		if p.server != nil {
			p.server.stop()
		}
	})
}

// Counting records the tables a pre-count counts (migrate.Progress).
func (p *Progress) Counting(tables []string) {
	p.atWork()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.counting = true
	for _, name := range tables {
		p.t.table(name, p.clock())
	}
}

// Total records the pre-count of table (migrate.Progress).
func (p *Progress) Total(table string, n int64) {
	p.atWork()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.table(table, p.clock()).total = n
}

// Resumed records the rows of table earlier sessions did
// (migrate.Progress).
func (p *Progress) Resumed(table string, n int64) {
	p.atWork()
	p.mu.Lock()
	defer p.mu.Unlock()
	tt := p.t.table(table, p.clock())
	tt.done += n
	tt.resumed += n
}

// Read records rows of table read (migrate.Progress).
func (p *Progress) Read(table string, n int64) {
	p.atWork()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	p.t.table(table, now).read += n
	p.t.working(now)
}

// Advance records rows of table with their final outcome
// (migrate.Progress), and prints the table's JSON progress line when the
// last one is older than jsonEvery.
func (p *Progress) Advance(table string, n int64) {
	p.atWork()
	if p.metrics != nil {
		p.metrics.read.WithLabelValues(table).Add(float64(n))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	p.t.table(table, now).done += n
	p.t.session += n
	p.t.current = table
	p.t.working(now)
	if now.Sub(p.jsonAt[table]) >= jsonEvery {
		p.printJSON(table, now)
	}
}

// Outcome records what became of some items of group
// (migrate.Progress).
func (p *Progress) Outcome(group string, o migrate.Outcome) {
	if o == (migrate.Outcome{}) {
		return
	}
	p.atWork()
	if p.metrics != nil {
		p.metrics.outcome(group, o)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.outcome(o)
}

// TableDone records that table is done (migrate.Progress): its bar stays
// as a line, and its last JSON progress line says it is finished.
func (p *Progress) TableDone(table string) {
	p.atWork()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	p.t.finish(table, now)
	p.printJSON(table, now)
	if p.bar && !p.following {
		p.out.screen.keep(renderBar(p.barView(table, now), p.columns()))
	}
}

// Message prints an engine's status line (migrate.Progress); none
// during the passes of --follow, whose pass lines say what they did.
func (p *Progress) Message(msg string) {
	p.atWork()
	p.mu.Lock()
	following := p.following
	p.mu.Unlock()
	if !following {
		p.out.Status("%s", msg)
	}
}

// Step records verify's phase msg (verify.Progress): a status line, or
// with --output json a StepProgress line; the progress lines say it.
func (p *Progress) Step(msg string) {
	p.mu.Lock()
	p.phase, p.phaseAt = msg, p.clock()
	p.mu.Unlock()
	if p.json {
		// A write error is kept by the lines and returned by the summary's.
		_ = p.out.Emit(LineProgress, StepProgress{Step: msg, RUNow: ruNow(p.meters.now())})
		return
	}
	p.out.Status("%s", msg)
}

// Following starts the passes of --follow, whose lag starts at since:
// lines are printed during passes only, with no bar and no JSON progress
// lines.
func (p *Progress) Following(since time.Time) {
	if p.metrics != nil {
		p.metrics.follow(since)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.following, p.active = true, false
}

// PassStarted and PassEnded bracket a pass of --follow: lines are printed
// during passes, and the health does not wait for requests between them.
func (p *Progress) PassStarted() {
	if p.metrics != nil {
		p.metrics.health.setIdle(false)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active = true
	p.t.newPass()
}

// PassEnded: see PassStarted.
func (p *Progress) PassEnded(r migrate.PassReport) {
	if p.metrics != nil {
		p.metrics.pass(r)
		p.metrics.health.setIdle(true)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active = false
}

// printLine prints the progress line when the command is at work: on
// stderr (lines) and in the log; and with --output json the current
// table's progress line when it had none for an interval.
func (p *Progress) printLine() {
	p.mu.Lock()
	if !p.active {
		p.mu.Unlock()
		return
	}
	now := p.clock()
	msg := lineText(p.lineView(now))
	p.line = p.markAt(now)
	if cur := p.t.currentTable(); cur != "" && now.Sub(p.jsonAt[cur]) >= p.interval {
		p.printJSON(cur, now)
	}
	p.mu.Unlock()
	if p.lines {
		p.out.screen.println(p.stamp().UTC().Format(time.RFC3339) + " " + p.name + ": " + msg)
	}
	p.out.Log().Printf("progress: %s", msg)
}

// printJSON prints table's JSON progress line, with --output json and
// not following (the caller holds mu).
func (p *Progress) printJSON(table string, now time.Time) {
	if !p.json || p.following {
		return
	}
	p.jsonAt[table] = now
	tt := p.t.tables[table]
	line := TableProgress{Table: table, Done: tt.done, Read: tt.read, RowsPerSecond: tt.rate(now), Finished: tt.finished, RUNow: ruNow(p.meters.now())}
	if s := tt.size(); s >= 0 {
		line.Total = &s
	}
	// A write error is kept by the lines and returned by the summary's.
	_ = p.out.Emit(LineProgress, line)
}

// drawBar draws the bar of the current table, if any.
func (p *Progress) drawBar() {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.t.currentTable()
	if p.following || cur == "" || p.t.tables[cur].finished {
		return
	}
	p.out.screen.draw(renderBar(p.barView(cur, p.clock()), p.columns()))
}

// columns is the terminal's width.
func (p *Progress) columns() int {
	if w := p.width(); w > 0 {
		return w
	}
	return 80
}

// lineView is what the progress line says at now (the caller holds mu).
func (p *Progress) lineView(now time.Time) lineView {
	v := lineView{
		words: p.words, phase: p.phase, phaseFor: now.Sub(p.phaseAt), tables: len(p.t.order),
		written: p.t.written, dead: p.t.dead, conflicts: p.t.conflicts, counting: p.t.counting, live: p.meters.now(),
	}
	if name := p.t.currentTable(); name != "" {
		v.name, v.current = name, *p.t.tables[name]
	}
	v.allDone, v.allTotal = p.t.all()
	v.eta, v.etaKnown = p.t.eta(now)
	if secs := now.Sub(p.line.at).Seconds(); secs > 0 {
		v.rate = float64(p.t.session-p.line.rows) / secs
	}
	return v
}

// barView is what table's bar shows at now (the caller holds mu).
func (p *Progress) barView(table string, now time.Time) barView {
	tt := p.t.tables[table]
	v := barView{
		name: table, done: tt.done, total: tt.size(), read: tt.read, things: p.words.Read, rate: tt.rate(now),
		finished: tt.finished, earlier: tt.finished && tt.resumed > 0 && tt.done == tt.resumed, took: now.Sub(tt.began), live: p.meters.now(),
	}
	v.eta, v.etaKnown = p.t.eta(now)
	return v
}
