package cmd

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/migrate"
)

// DefaultProgressInterval is the default of --progress-interval.
const DefaultProgressInterval = 10 * time.Second

// sampleEvery is the least time between two throughput samples of run
// (samples.jsonl) at its start; it doubles as the file is thinned.
const sampleEvery = time.Second

// observeFlags are the flags that let an operator watch a long command
// (run, replay, reverse, verify): --progress-interval and
// --metrics-addr.
type observeFlags struct {
	ProgressInterval time.Duration
	// MetricsAddr is --metrics-addr as given; addr is where to listen
	// (validate: a missing host is loopback).
	MetricsAddr string
	addr        string
	// m are the command's metrics, made by attach when --metrics-addr is
	// given; nil otherwise.
	m *metrics
}

func (f *observeFlags) bind(fl *pflag.FlagSet) {
	fl.DurationVar(&f.ProgressInterval, "progress-interval", DefaultProgressInterval, "how often to print a progress line when stderr is not a terminal (and to --log-file)")
	fl.StringVar(&f.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics and /healthz on `HOST:PORT` (no HOST: loopback; port 0 picks one)")
}

func (f *observeFlags) validate() error {
	if f.ProgressInterval <= 0 {
		return badValue("--progress-interval", f.ProgressInterval, "a positive duration such as 10s or 1m")
	}
	if f.MetricsAddr == "" {
		return nil
	}
	addr, err := metricsAddr(f.MetricsAddr)
	if err != nil {
		return err
	}
	f.addr = addr
	return nil
}

// metricsAddr checks --metrics-addr and returns the address to listen
// on: HOST:PORT, with loopback (127.0.0.1) for an empty HOST, so that
// nothing is served beyond the machine unless a host says so.
func metricsAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", badValue("--metrics-addr", s, "HOST:PORT such as 127.0.0.1:9464 (or 0.0.0.0:9464 to serve beyond this machine)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", badValue("--metrics-addr", s, "HOST:PORT with a port from 0 to 65535")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// attach makes the metrics of command when --metrics-addr is given, and
// has f's clients send their requests through them (Factory.azureOptions).
func (f *observeFlags) attach(fac *Factory, command string) {
	if f.MetricsAddr == "" {
		return
	}
	f.m = newMetrics(command, endpointHosts(fac), fac.Global.RetryTimeout)
	fac.metrics = f.m
}

// observeWords are what a command's progress lines call what it reads
// and what it writes.
type observeWords struct {
	// read: "rows" (run, replay) or "docs" (reverse); written: "docs
	// written" or "rows written".
	read, written string
}

var (
	rowsToDocs = observeWords{read: "rows", written: "docs written"}
	docsToRows = observeWords{read: "docs", written: "rows written"}
)

// observer is what a command shows of its work besides its output: a
// timestamped progress line every --progress-interval, on stderr when it
// is not a terminal (text output, not --quiet) and in --log-file; its
// metrics (--metrics-addr); and for run, the throughput samples of the
// state directory. It hears the engine as a display of
// commandProgress (counter and the outcomes), verify's phases, and the
// passes of --follow. Its methods are safe for concurrent use; a nil
// *observer does nothing.
type observer struct {
	name     string
	words    observeWords
	o        *output
	log      *logFile
	stamp    func() time.Time // the command's clock, for the lines' stamps
	lines    bool             // the lines go to stderr too
	interval time.Duration
	ru       *ruFlags // nil: no Cosmos DB figures
	m        *metrics // nil: no metrics
	server   *metricsServer
	// samples, when not nil, records run's throughput in stateDir.
	samples  *migrate.SampleLog
	stateDir string

	mu       sync.Mutex
	tables   map[string]*observedTable
	order    []string // tables in the order they were first heard of
	current  string   // the table last advanced
	written  int64
	dead     int64
	conflict int64
	active   bool // at work: lines are printed
	phase    string
	phaseAt  time.Time
	first    time.Time // the first row advanced this session
	session  int64     // rows advanced this session
	line     mark      // what the last line saw
	sample   mark      // what the last sample saw
	runID    string
	sampling bool // the samples file can be written (a failure stops it)

	stop chan struct{}
	done chan struct{}
}

// observedTable is what the observer knows of one table (or container).
type observedTable struct {
	total    int64 // -1: unknown
	done     int64
	finished bool
}

// mark is what the observer had seen at a line or a sample, for the
// rates since.
type mark struct {
	at      time.Time
	rows    int64
	written int64
	// items are the writes the flow saw end: docs as they are written,
	// where written counts them at their page's checkpoint.
	items     int64
	ru        float64
	requests  int64
	throttled int64
}

// observe starts the observer of command name (run, replay, reverse,
// verify) with output o: the metrics server when --metrics-addr is
// given (its address said in a status line, even with --quiet: it was
// asked for), and the ticker of the progress lines. ru are the command's
// pacer and flow (nil for none); words name what it reads and writes;
// stateDir, when not empty, is where run's throughput samples go. The
// caller must call finish. A usage error says when it cannot listen.
func (f *observeFlags) observe(io IO, o *output, name string, ru *ruFlags, words observeWords, stateDir string) (*observer, error) {
	b := &observer{
		name: name, words: words, o: o, log: io.log, stamp: io.Now, ru: ru, m: f.m,
		lines:    !io.ErrIsTerminal && !io.JSON && !io.Quiet,
		interval: f.ProgressInterval,
		tables:   map[string]*observedTable{},
		stateDir: stateDir,
		stop:     make(chan struct{}), done: make(chan struct{}),
	}
	if b.interval <= 0 {
		b.interval = DefaultProgressInterval
	}
	if stateDir != "" {
		b.samples, b.sampling = migrate.NewSampleLog(stateDir, sampleEvery), true
	}
	if b.m != nil {
		b.m.watch(ru)
		s, err := serveMetrics(f.addr, b.m)
		if err != nil {
			return nil, err
		}
		b.server = s
		o.say(lineStatus, fmt.Sprintf("metrics on http://%s/metrics, health on http://%s/healthz", s.addr, s.addr))
	}
	b.line.at, b.sample.at = time.Now(), time.Now()
	go b.tick()
	return b, nil
}

// shows reports whether the observer needs the engine's counts: it has
// somewhere to show them.
func (b *observer) shows() bool {
	return b != nil && (b.lines || b.log != nil || b.m != nil || b.samples != nil)
}

// wantsTotals reports whether the observer's lines show totals (and an
// ETA), which the engine then pre-counts.
func (b *observer) wantsTotals() bool {
	return b != nil && (b.lines || b.log != nil)
}

// tick prints a line every interval while the command is at work, and
// takes run's samples, until finish.
func (b *observer) tick() {
	defer close(b.done)
	lines := time.NewTicker(b.interval)
	defer lines.Stop()
	every := sampleEvery
	samples := time.NewTicker(every)
	defer samples.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-lines.C:
			b.printLine()
		case <-samples.C:
			if b.takeSample(false) && b.samples.Every != every {
				every = b.samples.Every
				samples.Reset(every)
			}
		}
	}
}

// finish stops the ticker and the metrics server; run's last sample is
// taken first, so that the charts reach the end of the session.
func (b *observer) finish() {
	if b == nil {
		return
	}
	close(b.stop)
	<-b.done
	b.takeSample(true)
	if b.server != nil {
		b.server.stop()
	}
}

// table returns the observed table name (the caller holds mu).
func (b *observer) table(name string) *observedTable {
	t, ok := b.tables[name]
	if !ok {
		t = &observedTable{total: -1}
		b.tables[name] = t
		b.order = append(b.order, name)
	}
	return t
}

func (b *observer) Total(table string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.table(table).total = n
}

func (b *observer) Resumed(table string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.table(table).done += n
	b.active = true
}

func (b *observer) Advance(table string, n int64) {
	if b.m != nil {
		b.m.read.WithLabelValues(table).Add(float64(n))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.table(table).done += n
	b.current, b.active = table, true
	if b.first.IsZero() {
		b.first = time.Now()
	}
	b.session += n
}

func (b *observer) TableDone(table string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.table(table)
	t.finished = true
	if t.total >= 0 && t.total < t.done {
		t.total = t.done
	}
}

// Outcome counts what became of some items of source (OutcomeProgress).
func (b *observer) Outcome(source string, o migrate.Outcome) {
	if b.m != nil {
		b.m.outcome(source, o)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written += o.Written
	b.dead += o.DeadLetters
	b.conflict += o.Conflicts
}

// step records verify's phase msg: its lines say it.
func (b *observer) step(msg string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.phase, b.phaseAt, b.active = msg, time.Now(), true
}

// following starts the lag of --follow at since, before the first pass.
func (b *observer) following(since time.Time) {
	if b != nil && b.m != nil {
		b.m.follow(since)
	}
}

// passStarted and passEnded bracket a pass of --follow: lines are printed
// during passes, and the health does not wait for requests between them.
func (b *observer) passStarted() {
	if b == nil {
		return
	}
	if b.m != nil {
		b.m.health.setIdle(false)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active = true
	// A pass reads its window from the start: its tables anew.
	b.tables, b.order, b.current = map[string]*observedTable{}, nil, ""
}

func (b *observer) passEnded(r migrate.PassReport) {
	if b == nil {
		return
	}
	if b.m != nil {
		b.m.pass(r)
		b.m.health.setIdle(true)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active = false
}

// printLine prints the progress line, when the command is at work: on
// stderr (lines) and in the log.
func (b *observer) printLine() {
	b.mu.Lock()
	if !b.active {
		b.mu.Unlock()
		return
	}
	now := time.Now()
	msg := b.describe(now)
	b.line = b.markAt(now)
	b.mu.Unlock()
	if b.lines {
		b.o.progressLine(b.stamp().UTC().Format(time.RFC3339) + " " + b.name + ": " + msg)
	}
	b.log.Printf("progress: %s", msg)
}

// markAt is what the observer has seen at now (the caller holds mu).
func (b *observer) markAt(now time.Time) mark {
	m := mark{at: now, rows: b.session, written: b.written}
	if b.ru != nil && b.ru.p != nil {
		s := b.ru.p.Stats()
		m.ru, m.requests, m.throttled = s.RequestUnits, s.Requests, s.Throttled
	}
	if b.ru != nil && b.ru.f != nil {
		m.items = b.ru.f.Stats().Items
	}
	return m
}

// describe is the progress line's message at now (the caller holds mu):
// for an engine, the current table's rows done of its total, all of
// them, what was written, the rate since the last line, the RU/s and
// throttled share of the last seconds, the ETA, and the requests in
// flight with what bounds them; for verify, its phase.
func (b *observer) describe(now time.Time) string {
	var parts []string
	if len(b.order) == 0 {
		phase := b.phase
		if phase == "" {
			phase = "starting"
		}
		parts = append(parts, fmt.Sprintf("%s (for %s)", phase, roughSeconds(now.Sub(b.phaseAt))))
	} else {
		cur := b.currentTable()
		t := b.tables[cur]
		parts = append(parts, cur+" "+ofTotal(t.done, t.total, b.words.read))
		if len(b.order) > 1 {
			var done, total int64
			known := true
			for _, name := range b.order {
				t := b.tables[name]
				done += t.done
				total += t.total
				known = known && t.total >= 0
			}
			if !known {
				total = -1
			}
			parts = append(parts, ofTotal(done, total, "")+" in all")
		}
		w := fmt.Sprintf("%s %s", count(b.written), b.words.written)
		if b.dead > 0 {
			w += fmt.Sprintf(", %s dead letter(s)", count(b.dead))
		}
		if b.conflict > 0 {
			w += fmt.Sprintf(", %s conflict(s)", count(b.conflict))
		}
		parts = append(parts, w)
		if secs := now.Sub(b.line.at).Seconds(); secs > 0 {
			parts = append(parts, fmt.Sprintf("%s %s/s", thousands(math.Round(float64(b.session-b.line.rows)/secs)), b.words.read))
		}
	}
	if b.ru != nil && b.ru.p != nil {
		perSecond, share := b.ru.p.Recent(5 * time.Second)
		parts = append(parts, fmt.Sprintf("%s RU/s, %.1f%% throttled", thousands(math.Round(perSecond)), 100*share))
	}
	if len(b.order) > 0 {
		parts = append(parts, "ETA "+b.eta(now))
	}
	if b.ru != nil && b.ru.f != nil && len(b.order) > 0 {
		fs := b.ru.f.Stats()
		flight := fmt.Sprintf("%d in flight (window %d of %d", fs.InFlight, fs.Limit, fs.Max)
		if bound := boundText(fs.Bound); bound != "" {
			flight += ", bounded by " + bound
		}
		parts = append(parts, flight+")")
	}
	return strings.Join(parts, "; ")
}

// currentTable is the table the line is about (the caller holds mu):
// the one advanced last while it is not finished, else the first one
// not finished, else the last one heard of.
func (b *observer) currentTable() string {
	if t, ok := b.tables[b.current]; ok && !t.finished {
		return b.current
	}
	for _, name := range b.order {
		if !b.tables[name].finished {
			return name
		}
	}
	return b.order[len(b.order)-1]
}

// eta is the time left at this session's mean rate for the rows of the
// tables whose total is known (the caller holds mu); "unknown" until
// there is a rate and a total.
func (b *observer) eta(now time.Time) string {
	var left int64
	known := false
	for _, name := range b.order {
		t := b.tables[name]
		if t.total >= 0 && !t.finished {
			left += max(0, t.total-t.done)
			known = true
		}
	}
	secs := now.Sub(b.first).Seconds()
	if !known || b.first.IsZero() || b.session == 0 || secs <= 0 {
		return "unknown"
	}
	return roughSeconds(time.Duration(float64(left) / (float64(b.session) / secs) * float64(time.Second)))
}

// takeSample appends one throughput sample of run, when it is at work
// and some time went by since the last (any time, when last: the end of
// the session); it reports whether it took one.
// A samples file that cannot be written is warned about once, and no
// more samples are taken: the run goes on.
func (b *observer) takeSample(last bool) bool {
	if b.samples == nil {
		return false
	}
	b.mu.Lock()
	now := time.Now()
	least := b.samples.Every / 2
	if last {
		least = time.Millisecond
	}
	if !b.sampling || !b.active || now.Sub(b.sample.at) < least {
		b.mu.Unlock()
		return false
	}
	if b.runID == "" {
		st, err := migrate.LoadState(b.stateDir)
		if err != nil || st == nil {
			b.mu.Unlock()
			return false
		}
		b.runID = st.RunID
	}
	cur, prev := b.markAt(now), b.sample
	var done int64
	for _, t := range b.tables {
		done += t.done
	}
	var inFlight int
	if b.ru != nil && b.ru.f != nil {
		inFlight = b.ru.f.Stats().InFlight
	}
	b.sample = cur
	secs := now.Sub(prev.at).Seconds()
	s := migrate.ThroughputSample{
		Time: b.stamp().UTC(), RunID: b.runID, Seconds: secs, RowsDone: done,
		RowsPerSecond: float64(cur.rows-prev.rows) / secs, DocsPerSecond: float64(cur.items-prev.items) / secs,
		RUPerSecond: (cur.ru - prev.ru) / secs, InFlight: inFlight,
	}
	if n := cur.requests - prev.requests; n > 0 {
		s.ThrottledShare = float64(cur.throttled-prev.throttled) / float64(n)
	}
	err := b.samples.Append(s)
	if err != nil {
		b.sampling = false
	}
	b.mu.Unlock()
	if err != nil {
		b.o.warning("throughput samples: %v; the report's charts stop here", unwrapPath(err))
	}
	return err == nil
}

// ofTotal says n of total things ("12,345/40,000 rows (31%)"), or n
// things when the total is unknown (-1).
func ofTotal(n, total int64, things string) string {
	if things != "" {
		things = " " + things
	}
	if total < 0 {
		return count(n) + things
	}
	pct := 100.0
	if total > 0 {
		pct = math.Floor(100 * float64(n) / float64(total))
	}
	return fmt.Sprintf("%s/%s%s (%.0f%%)", count(n), count(total), things, pct)
}

// count is n with thousands separators.
func count(n int64) string { return thousands(float64(n)) }

// roughSeconds says d for a progress line: "45s", "12m30s", "3h05m".
func roughSeconds(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
