package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/migrate"
)

// counter is the sum of the samples of the counter family name in m.
func counter(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, s := range mf.GetMetric() {
				sum += s.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// The engine's reports reach the metrics through Progress: the rows
// advanced are read_total, the outcomes written_total, dead_letters_total
// and conflicts_total, by source. The server says where it listens.
func TestProgressCountsIntoTheMetrics(t *testing.T) {
	var out, errOut testenv.Buffer
	m := NewMetrics("replay", map[string]string{}, time.Minute)
	p, err := Start(Config{Name: "replay", Words: RowsToDocs, Out: NewOutput("replay", &out, &errOut, false, true, nil),
		Interval: time.Hour, Metrics: m, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	p.Advance("Entities", 3)
	p.Outcome("Entities", migrate.Outcome{Written: 2, DeadLetters: 1})
	p.Outcome("Config", migrate.Outcome{Conflicts: 1})
	for name, want := range map[string]float64{
		"bifrost_migrate_read_total": 3, "bifrost_migrate_written_total": 2,
		"bifrost_migrate_dead_letters_total": 1, "bifrost_migrate_conflicts_total": 1,
	} {
		if got := counter(t, m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	addr := strings.TrimPrefix(strings.Fields(errOut.String())[3], "http://")
	if !strings.HasPrefix(errOut.String(), "replay: metrics on http://127.0.0.1:") {
		t.Fatalf("stderr %q: no metrics line (said even with --quiet)", errOut.String())
	}
	resp, err := http.Get("http://" + strings.TrimSuffix(addr, "/metrics,") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Finish()
	if _, err := http.Get("http://" + strings.TrimSuffix(addr, "/metrics,") + "/healthz"); err == nil {
		t.Error("the metrics server still answers after Finish")
	}
}

// A busy address is a *ListenError that says why.
func TestMetricsCannotListen(t *testing.T) {
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	addr := strings.TrimPrefix(busy.URL, "http://")
	_, err := Start(Config{Name: "run", Out: NewOutput("run", nil, nil, false, true, nil), Metrics: NewMetrics("run", nil, time.Minute), MetricsAddr: addr})
	le, ok := err.(*ListenError)
	if !ok || le.Addr != addr || le.Why != "address already in use" {
		t.Errorf("error %#v, want a ListenError on %s: address already in use", err, addr)
	}
}

// /healthz: 200 while a request completed within the timeout or between
// passes of --follow; 503 once none did, saying why.
func TestHealth(t *testing.T) {
	clock := newFakeClock()
	h := newHealth(3*time.Second, clock.now)
	check := func(wantOK bool, wantWhy string) {
		t.Helper()
		ok, why, _ := h.check()
		if ok != wantOK || why != wantWhy {
			t.Errorf("check: %v %q, want %v %q", ok, why, wantOK, wantWhy)
		}
	}
	clock.add(time.Second)
	check(true, "ok: a request completed 1s ago")
	clock.add(3 * time.Second)
	check(false, "stuck: no request completed for 4s (--retry-timeout 3s)")
	h.setIdle(true)
	check(true, "ok: waiting for the next pass")
	clock.add(time.Minute)
	h.setIdle(false) // at work again: the clock starts anew
	check(true, "ok: a request completed 0s ago")
	h.completed()
	rec := httptest.NewRecorder()
	clock.add(5 * time.Second)
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "stuck: no request completed for 5s (--retry-timeout 3s)\n" {
		t.Errorf("healthz: %d %q", rec.Code, rec.Body.String())
	}
}
