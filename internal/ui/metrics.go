package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/version"
	"github.com/bifrost/bifrost-migrate/migrate"
	"github.com/bifrost/bifrost-migrate/store"
)

// metricPrefix begins the name of every metric of the tool.
const metricPrefix = "bifrost_migrate_"

// Metrics are the Prometheus metrics of one command (--metrics-addr;
// docs/observability.md lists them): counters of what the engine did,
// of the HTTP requests and of the request units, gauges of the flow and
// of --follow, a histogram of request latency, and the health that
// /healthz answers. Labels name tables, containers, services and status
// codes, never an endpoint or a key. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg    *prometheus.Registry
	health *health

	read, written, deadLetters, conflicts *prometheus.CounterVec
	requests, throttled                   *prometheus.CounterVec
	latency                               *prometheus.HistogramVec
	passes                                prometheus.Counter
	lastPass, lastPassDuration, newest    prometheus.Gauge

	// hosts names the service of each endpoint host ("tables", "blobs",
	// "cosmos").
	hosts map[string]string

	mu sync.Mutex
	// meters are the command's pacer and flow once it has them.
	meters Meters
	// watermark is the time up to which --follow has applied every change
	// (the start of the last pass, or a newer change it applied; before
	// the first pass, --since); zero when not following.
	watermark time.Time
}

// NewMetrics returns the metrics of command (run, replay, reverse,
// verify) whose requests go to the endpoints of hosts (a host with its
// port, lower case → its service: "tables", "blobs", "cosmos"), stuck when
// no request completed for longer than timeout (--retry-timeout).
func NewMetrics(command string, hosts map[string]string, timeout time.Duration) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, hosts: hosts, health: newHealth(timeout, time.Now)}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricPrefix + name, Help: help})
		reg.MustRegister(g)
		return g
	}
	m.read = counter("read_total", "Rows (run, replay) or docs (reverse) read and given their final outcome, by the table or container read.", "source")
	m.written = counter("written_total", "Docs (run, replay) or rows (reverse) written, by the table or container read.", "source")
	m.deadLetters = counter("dead_letters_total", "Dead letters recorded, by the table or container read.", "source")
	m.conflicts = counter("conflicts_total", "Conflicts met by replay or reverse (a doc still in conflict counts again at each pass), by the table or container read.", "source")
	m.requests = counter("requests_total", "HTTP requests (each attempt) by service (tables, blobs, cosmos) and status code (\"error\": no answer).", "service", "code")
	m.throttled = counter("throttled_total", "Requests answered 429 (throttled), by service.", "service")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: metricPrefix + "request_duration_seconds", Help: "Time from sending a request to its answer's headers, by service.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"service"})
	reg.MustRegister(m.latency)
	passes := prometheus.NewCounter(prometheus.CounterOpts{Name: metricPrefix + "follow_passes_total", Help: "Passes of --follow finished."})
	reg.MustRegister(passes)
	m.passes = passes
	m.lastPass = gauge("follow_last_pass_timestamp_seconds", "When the last pass of --follow ended (Unix time).")
	m.lastPassDuration = gauge("follow_last_pass_duration_seconds", "How long the last pass of --follow took.")
	m.newest = gauge("follow_newest_change_timestamp_seconds", "The time of the newest change --follow applied (Unix time; 0 before any).")
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPrefix + "info", Help: "The command and the tool's version (always 1)."}, []string{"command", "version"})
	info.WithLabelValues(command, version.String()).Set(1)
	reg.MustRegister(info, engineCollector{m}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watch makes the metrics read the pacer and the flow of mt (once the
// command made them).
func (m *Metrics) watch(mt Meters) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meters = mt
}

// follow starts the lag at since: every change before it is, by
// definition, not the follower's to apply.
func (m *Metrics) follow(since time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watermark = since
}

// pass records a finished pass of --follow.
func (m *Metrics) pass(r migrate.PassReport) {
	m.passes.Inc()
	end := r.Started.Add(r.Took)
	m.lastPass.Set(float64(end.UnixNano()) / 1e9)
	m.lastPassDuration.Set(r.Took.Seconds())
	m.mu.Lock()
	defer m.mu.Unlock()
	mark := r.Started
	if r.Newest.After(mark) {
		mark = r.Newest
	}
	if mark.After(m.watermark) {
		m.watermark = mark
	}
	if !r.Newest.IsZero() {
		m.newest.Set(float64(r.Newest.UnixNano()) / 1e9)
	}
}

// outcome counts what became of some items of source.
func (m *Metrics) outcome(source string, o migrate.Outcome) {
	m.written.WithLabelValues(source).Add(float64(o.Written))
	m.deadLetters.WithLabelValues(source).Add(float64(o.DeadLetters))
	m.conflicts.WithLabelValues(source).Add(float64(o.Conflicts))
}

// engineCollector collects what the metrics read at each scrape: the
// request units by container and the rates of the pacer, the requests in
// flight and their bound from the flow, the follow lag and the health.
type engineCollector struct{ m *Metrics }

var (
	descRU        = prometheus.NewDesc(metricPrefix+"request_units_total", "Request units consumed (the service's x-ms-request-charge), by service and container (\"account\": requests on no container).", []string{"service", "container"}, nil)
	descRURate    = prometheus.NewDesc(metricPrefix+"ru_per_second", "Request units per second over the last 5 seconds.", nil, nil)
	descRUAllowed = prometheus.NewDesc(metricPrefix+"ru_allowed_per_second", "The request units per second the pacer allows now (0 while it is not limiting).", nil, nil)
	descMaxRU     = prometheus.NewDesc(metricPrefix+"max_ru", "--max-ru (0: none, the pacer finds the account's limit).", nil, nil)
	descInFlight  = prometheus.NewDesc(metricPrefix+"in_flight", "Writes in flight now.", nil, nil)
	descLimit     = prometheus.NewDesc(metricPrefix+"in_flight_limit", "The window: the most writes in flight allowed now (the RU budget × the latency measured).", nil, nil)
	descMax       = prometheus.NewDesc(metricPrefix+"in_flight_max", "The bound of the window (--concurrency).", nil, nil)
	descBound     = prometheus.NewDesc(metricPrefix+"bound", "What held the writes back longest so far: 1 for it (budget, max-ru, source, concurrency).", []string{"bound"}, nil)
	descLag       = prometheus.NewDesc(metricPrefix+"follow_lag_seconds", "--follow: seconds between now and the newest time up to which every change is applied (the start of the last pass, or a newer change it applied; --since before the first pass).", nil, nil)
	descLast      = prometheus.NewDesc(metricPrefix+"last_request_timestamp_seconds", "When a request last completed (Unix time): an answer that is not 429, 408, 449 or 5xx.", nil, nil)
	descHealthy   = prometheus.NewDesc(metricPrefix+"healthy", "1 while the command makes progress, 0 once no request completed for longer than --retry-timeout (as /healthz answers).", nil, nil)
)

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRU, descRURate, descRUAllowed, descMaxRU, descInFlight, descLimit, descMax, descBound, descLag, descLast, descHealthy} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	r, mark := m.meters, m.watermark
	m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if r.Pacer != nil {
		s := r.Pacer.Stats()
		for container, ru := range s.ByContainer {
			if container == "" {
				container = "account"
			}
			ch <- prometheus.MustNewConstMetric(descRU, prometheus.CounterValue, ru, "cosmos", container)
		}
		perSecond, _ := r.Pacer.Recent(recentWindow)
		allowed, _ := r.Pacer.Rate()
		gauge(descRURate, perSecond)
		gauge(descRUAllowed, allowed)
		gauge(descMaxRU, r.MaxRU)
	}
	if r.Flow != nil {
		fs := r.Flow.Stats()
		gauge(descInFlight, float64(fs.InFlight))
		gauge(descLimit, float64(fs.Limit))
		gauge(descMax, float64(fs.Max))
		if fs.Bound != migrate.BoundNone {
			gauge(descBound, 1, string(fs.Bound))
		}
	}
	if !mark.IsZero() {
		gauge(descLag, max(0, time.Since(mark).Seconds()))
	}
	ok, _, last := m.health.check()
	gauge(descLast, float64(last.UnixNano())/1e9)
	healthy := 0.0
	if ok {
		healthy = 1
	}
	gauge(descHealthy, healthy)
}

// health is what /healthz answers: whether the command makes progress,
// that is whether a request completed within the last --retry-timeout,
// or it waits between two passes of --follow. It is safe for concurrent
// use.
type health struct {
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex
	last time.Time // when a request last completed (or the start)
	idle bool      // between two passes of --follow
}

func newHealth(timeout time.Duration, now func() time.Time) *health {
	return &health{timeout: timeout, now: now, last: now()}
}

// completed records a completed request.
func (h *health) completed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.now()
}

// setIdle says whether the command waits between passes (idle) or works;
// at work again, the clock of the check starts anew.
func (h *health) setIdle(idle bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.idle && !idle {
		h.last = h.now()
	}
	h.idle = idle
}

// check reports whether the command is healthy, with a sentence that
// says why, and when a request last completed.
func (h *health) check() (ok bool, why string, last time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	since := h.now().Sub(h.last)
	switch {
	case h.idle:
		return true, "ok: waiting for the next pass", h.last
	case since > h.timeout:
		return false, fmt.Sprintf("stuck: no request completed for %s (--retry-timeout %s)", since.Round(time.Second), h.timeout), h.last
	}
	return true, fmt.Sprintf("ok: a request completed %s ago", since.Round(time.Millisecond)), h.last
}

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	ok, why, _ := h.check()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, why)
}

// Transport wraps next (nil: azure.NewTransport()) so that every request
// is counted, timed and heard by the health.
func (m *Metrics) Transport(next http.RoundTripper) http.RoundTripper {
	return &metricsTransport{next: next, m: m}
}

type metricsTransport struct {
	next http.RoundTripper
	m    *Metrics
	once sync.Once
}

func (t *metricsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.once.Do(func() {
		if t.next == nil {
			t.next = azure.NewTransport()
		}
	})
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	took := time.Since(start)
	service := t.m.service(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.m.requests.WithLabelValues(service, code).Inc()
	t.m.latency.WithLabelValues(service).Observe(took.Seconds())
	if err == nil {
		switch k := azure.AnswerKind(resp); {
		case k == store.Throttled:
			t.m.throttled.WithLabelValues(service).Inc()
		case !k.Retryable():
			t.m.health.completed()
		}
	}
	return resp, err
}

// service names the service a request goes to: by its host (with the
// port) among the command's endpoints; a Cosmos DB account's regional
// endpoints by their path; else "other" (a token endpoint of Entra ID).
func (m *Metrics) service(req *http.Request) string {
	if s, ok := m.hosts[strings.ToLower(req.URL.Host)]; ok {
		return s
	}
	if strings.HasPrefix(req.URL.Path, "/dbs") {
		return "cosmos"
	}
	return "other"
}

// metricsServer serves /metrics and /healthz on one address.
type metricsServer struct {
	srv  *http.Server
	addr string // the address listened on, the port chosen
	done chan error
}

// ListenError is the error of metrics that cannot be served: the
// address asked for and why ("address already in use").
type ListenError struct {
	Addr, Why string
}

func (e *ListenError) Error() string { return "cannot listen on " + e.Addr + ": " + e.Why }

// serveMetrics listens on addr (HOST:PORT, validated) and serves m; a
// *ListenError when it cannot listen there.
func serveMetrics(addr string, m *Metrics) (*metricsServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		why := err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			why = oe.Err.Error()
		}
		return nil, &ListenError{Addr: addr, Why: strings.TrimPrefix(why, "bind: ")}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", m.health)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "bifrost-migrate: /metrics (Prometheus), /healthz")
	})
	s := &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(l) }()
	return s, nil
}

// stop closes the server at once: the command is over.
func (s *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		_ = s.srv.Close()
	}
	<-s.done
}
