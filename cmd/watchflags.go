package cmd

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/ui"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// The flags by which a long command is paced (--max-ru) and watched
// (--progress-interval, --metrics-addr); what is shown lives in
// internal/ui.

// ruFlags is --max-ru, the request-unit budget of the commands that send
// Cosmos DB requests in volume (run, replay, reverse, verify; SPEC §14).
type ruFlags struct {
	// MaxRU is the cap in RU/s; 0 means none: the command adapts to what
	// the account allows.
	MaxRU float64
	fs    *pflag.FlagSet

	// p and f are the command's pacer and flow, made by pacer().
	p *azure.Pacer
	f *migrate.Flow
}

func (r *ruFlags) bind(fl *pflag.FlagSet) {
	r.fs = fl
	fl.Float64Var(&r.MaxRU, "max-ru", 0, "use at most `N` Cosmos DB request units per second (default: find out what the account allows and keep to it)")
}

// validate rejects a --max-ru that is given but not positive.
func (r *ruFlags) validate() error {
	if r.fs != nil && r.fs.Changed("max-ru") && !(r.MaxRU > 0 && !math.IsInf(r.MaxRU, 1)) {
		return badValue("--max-ru", r.MaxRU, "a positive number of request units per second")
	}
	return nil
}

// pacer returns the pacer every Cosmos DB request of the command goes
// through, and makes the flow that sizes the command's requests in flight
// from the rate it allows (flow).
func (r *ruFlags) pacer() *azure.Pacer {
	r.p = azure.NewPacer(azure.PacerOptions{MaxRU: r.MaxRU})
	r.f = migrate.NewFlow(r.p, nil)
	return r.p
}

// flow is the command's flow (SPEC §14, Latency): requests in flight by
// the pacer's rate × the latency it observes, bounded by --concurrency.
func (r *ruFlags) flow() *migrate.Flow { return r.f }

// meters are the pacer and the flow, for the progress and the metrics to
// read (once pacer made them).
func (r *ruFlags) meters() ui.Meters { return ui.Meters{Pacer: r.p, Flow: r.f, MaxRU: r.MaxRU} }

// report is the request-unit part of the summary, docs the docs written
// (0: none counted), with what bounded the writes.
func (r *ruFlags) report(docs int64) ui.RUReport { return ui.NewRUReport(r.meters(), docs) }

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
	m *ui.Metrics
}

func (f *observeFlags) bind(fl *pflag.FlagSet) {
	fl.DurationVar(&f.ProgressInterval, "progress-interval", ui.DefaultProgressInterval, "how often to print a progress line: on stderr when it is not a terminal, on stdout with --output json, and to --log-file")
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
	f.m = ui.NewMetrics(command, endpointHosts(fac), fac.Global.RetryTimeout)
	fac.metrics = f.m
}

// progress starts the progress of command name with output o (ui.Start):
// the displays io asks for, every --progress-interval, of the figures of
// meters, in words; the metrics when --metrics-addr is given; run's
// throughput samples in stateDir when not empty. The caller must Finish
// it. A usage error says when it cannot listen on --metrics-addr.
func (f *observeFlags) progress(io IO, o *ui.Output, name string, meters ui.Meters, words ui.Words, stateDir string) (*ui.Progress, error) {
	p, err := ui.Start(ui.Config{
		Name: name, Words: words, Out: o, Stamp: io.Now, Interval: f.ProgressInterval,
		Terminal: io.ErrIsTerminal, Width: io.ErrWidth, Meters: meters,
		Metrics: f.m, MetricsAddr: f.addr, StateDir: stateDir,
	})
	if le := (*ui.ListenError)(nil); errors.As(err, &le) {
		return nil, UsageError(fmt.Errorf("--metrics-addr %s: cannot listen there: %s", le.Addr, le.Why))
	}
	return p, err
}

// endpointHosts returns the hosts of the endpoints of f's accounts
// (those it can resolve), each with its service's name.
func endpointHosts(f *Factory) map[string]string {
	hosts := map[string]string{}
	add := func(endpoint, service string) {
		if h := hostOf(endpoint); h != "" {
			hosts[h] = service
		}
	}
	if a, err := f.Cosmos(); err == nil {
		add(a.Endpoint, "cosmos")
	}
	if a, err := f.Storage(); err == nil {
		add(a.TableEndpoint, "tables")
	}
	if a, err := f.BlobStorage(); err == nil {
		add(a.BlobEndpoint, "blobs")
	}
	return hosts
}

// hostOf is the host (with its port, lower case) of an endpoint URL.
func hostOf(endpoint string) string {
	i := strings.Index(endpoint, "://")
	if i < 0 {
		return ""
	}
	h := endpoint[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	return strings.ToLower(h)
}
