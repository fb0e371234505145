package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/transform"
)

// scrape reads url (/metrics) and parses it with Prometheus's own text
// parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: not the text format: %v", url, err)
	}
	return mfs
}

// metricSum is the sum of a counter's or gauge's samples in mfs (0 when
// it has none yet); found says whether the family is there.
func metricSum(mfs map[string]*dto.MetricFamily, name string) (sum float64, found bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum, true
}

// healthz returns the status and body of /healthz at base.
func healthz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// followOut reads what a --follow with --output json printed so far:
// the metrics address of its status line and its pass lines.
type followOut struct {
	metrics string
	passes  []struct {
		Pass    int   `json:"pass"`
		Written int64 `json:"written"`
	}
}

var metricsLine = regexp.MustCompile(`^metrics on (http://\S+)/metrics, health on http://\S+/healthz$`)

func readFollowOut(stdout string) followOut {
	var f followOut
	for _, l := range strings.Split(stdout, "\n") {
		var line struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Pass    int    `json:"pass"`
			Written int64  `json:"written"`
		}
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		switch line.Type {
		case "status":
			if m := metricsLine.FindStringSubmatch(line.Message); m != nil {
				f.metrics = m[1]
			}
		case "pass":
			f.passes = append(f.passes, struct {
				Pass    int   `json:"pass"`
				Written int64 `json:"written"`
			}{line.Pass, line.Written})
		}
	}
	return f
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// bound (a bound against hangs, not a measure).
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplayFollowMetrics: `replay --follow --metrics-addr 127.0.0.1:0`
// says where it serves; a scrape, parsed by Prometheus's text parser,
// has the metrics of docs/observability.md; changes made in the tables
// grow the written counter by exactly the changes; the follow lag falls
// from the window's start (--since an hour ago) to under the interval;
// /healthz answers 200; and with the Cosmos DB side stalled (every
// request held by a proxy) it answers 503 once no request completed for
// --retry-timeout (3 s here).
func TestReplayFollowMetrics(t *testing.T) {
	e := newReplayEnv(t)
	proxy, err := faultproxy.Start(faultproxy.Config{Target: testenv.Cosmos(t).Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	env := map[string]string{}
	for k, v := range e.env {
		env[k] = v
	}
	env["CosmosDBConnection"] = "AccountEndpoint=" + proxy.URL() + ";AccountKey=" + testenv.Cosmos(t).Key + ";"
	rows := e.executionRows(3)

	const interval = 3 * time.Second
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	out, errOut, interrupt, done := startFollowing(t, env, append([]string{"--output", "json", "--retry-timeout", "3s"},
		e.replayArgs("--since", since, "--follow", "--interval", interval.String(), "--metrics-addr", "127.0.0.1:0")...))

	var base string
	waitFor(t, 30*time.Second, "metrics address in a status line", func() bool {
		base = readFollowOut(out.String()).metrics
		return base != ""
	})
	if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Fatalf("metrics served on %s, want loopback and the port chosen", base)
	}
	// Before the first pass ends, the lag is the window's: an hour.
	first := scrape(t, base+"/metrics")
	if n, _ := metricSum(first, "bifrost_migrate_follow_passes_total"); n == 0 {
		lag, found := metricSum(first, "bifrost_migrate_follow_lag_seconds")
		if !found || lag < 3000 {
			t.Errorf("before the first pass: follow lag %v (found %v), want about an hour (--since)", lag, found)
		}
	}
	waitFor(t, followInStep, "first pass line", func() bool { return len(readFollowOut(out.String()).passes) > 0 })
	before := scrape(t, base+"/metrics")
	for _, name := range []string{"bifrost_migrate_info", "bifrost_migrate_read_total", "bifrost_migrate_requests_total",
		"bifrost_migrate_request_duration_seconds", "bifrost_migrate_request_units_total", "bifrost_migrate_in_flight",
		"bifrost_migrate_in_flight_limit", "bifrost_migrate_follow_lag_seconds", "bifrost_migrate_follow_last_pass_timestamp_seconds",
		"bifrost_migrate_follow_passes_total", "bifrost_migrate_healthy"} {
		if _, ok := before[name]; !ok {
			t.Errorf("no %s in the scrape", name)
		}
	}
	if h := before["bifrost_migrate_request_duration_seconds"]; h != nil && h.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("request latency is a %s, want a histogram", h.GetType())
	}
	written0, _ := metricSum(before, "bifrost_migrate_written_total")
	passes0 := len(readFollowOut(out.String()).passes)

	// The application changes three executions in the tables.
	for i, row := range rows {
		e.mergeRow(transform.TableEntities, row.PartitionKey, row.RowKey, map[string]any{
			"Status": "Failed", "ErrorMessage": fmt.Sprintf("changed while followed with metrics (%d)", i)})
	}
	var passes []int64
	waitFor(t, followInStep, "pass writing the three changes", func() bool {
		var sum int64
		passes = passes[:0]
		for _, p := range readFollowOut(out.String()).passes[passes0:] {
			sum += p.Written
			passes = append(passes, p.Written)
		}
		return sum >= int64(len(rows))
	})
	after := scrape(t, base+"/metrics")
	written1, _ := metricSum(after, "bifrost_migrate_written_total")
	if got := written1 - written0; got != float64(len(rows)) {
		t.Errorf("written_total grew by %v over the passes %v, want %d (the changes)", got, passes, len(rows))
	}
	lag, _ := metricSum(after, "bifrost_migrate_follow_lag_seconds")
	// The lag was about an hour (--since) before the pass; after it, the
	// age of the changes it applied: seconds, more on a loaded machine.
	// The bound tells the two apart; it does not time the pass.
	if lag >= time.Minute.Seconds() {
		t.Errorf("follow lag %.1fs after the pass that applied the changes, want the age of those changes (under a minute)", lag)
	}
	if code, body := healthz(t, base); code != http.StatusOK || !strings.HasPrefix(body, "ok") {
		t.Errorf("healthz while following: %d %q, want 200", code, body)
	}

	// Cosmos DB stops answering: every request is held.
	proxy.SetLatency(time.Hour, 0)
	var body string
	waitFor(t, 60*time.Second, "503 from /healthz with Cosmos DB stalled", func() bool {
		var code int
		code, body = healthz(t, base)
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "stuck: no request completed for") || !strings.Contains(body, "--retry-timeout 3s") {
		t.Errorf("healthz body %q does not say why", body)
	}
	if h, _ := metricSum(scrape(t, base+"/metrics"), "bifrost_migrate_healthy"); h != 0 {
		t.Errorf("bifrost_migrate_healthy %v while stuck, want 0", h)
	}
	// Let it go: the held requests fail, the pass fails, the command ends.
	interrupt()
	_ = proxy.Close()
	select {
	case code := <-done:
		if code == ExitOK {
			t.Errorf("exit 0 after Cosmos DB stopped answering mid-pass; stderr:\n%s", errOut)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("replay --follow did not end after its Cosmos DB side went away")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Errorf("the metrics server still answers after the command ended")
	}
}
