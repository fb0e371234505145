package cmd_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/cmd"
	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
)

// Throughput at real-world latency (SPEC §14, Latency): every request to
// Table Storage and to Cosmos DB goes through a proxy that adds the round
// trip of an operator far from the accounts; the Cosmos DB proxy is also
// an account of latencyBudget RU/s.

// latencyBudget is the simulated account's RU/s.
const latencyBudget = 10000

// latencyExecutions is the size of the latency tests' source:
// BIFROST_LATENCY_N, or 20,000 (./bench.sh) when BIFROST_BENCH is set, else
// a short functional version for ./test.sh.
func latencyExecutions() int {
	if n, err := strconv.Atoi(os.Getenv("BIFROST_LATENCY_N")); err == nil && n > 0 {
		return n
	}
	if os.Getenv("BIFROST_BENCH") != "" {
		return 20000
	}
	return 1000
}

// latencyProxy starts a proxy adding latency in front of target, faults
// and budget as cfg says.
func latencyProxy(t *testing.T, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// tableEndpoint matches the TableEndpoint of a connection string.
var tableEndpoint = regexp.MustCompile(`TableEndpoint=([^;]+)`)

// far are the proxies between a process and the accounts.
type far struct {
	tables, cosmos *faultproxy.Proxy
}

// setLatency sets the latency both proxies add, with a tenth of it as
// jitter.
func (f far) setLatency(latency time.Duration) {
	f.tables.SetLatency(latency, latency/10)
	f.cosmos.SetLatency(latency, latency/10)
}

// farEnv is the environment of a process whose Table and Cosmos DB
// requests go through proxies adding latency, the Cosmos DB one an
// account of latencyBudget RU/s with a change feed.
func (s *resSource) farEnv(t *testing.T, latency time.Duration) (map[string]string, far) {
	t.Helper()
	conn := s.conn
	m := tableEndpoint.FindStringSubmatch(conn)
	if m == nil {
		t.Fatalf("no TableEndpoint in the storage connection string")
	}
	ep, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	jitter := latency / 10
	tables := latencyProxy(t, faultproxy.Config{Target: ep.Scheme + "://" + ep.Host + "/", Latency: latency, Jitter: jitter,
		Match: func(*http.Request) bool { return false }})
	cosmos := latencyProxy(t, faultproxy.Config{Target: s.cosmos.Endpoint, Latency: latency, Jitter: jitter,
		Budget: &faultproxy.Budget{RUPerSecond: latencyBudget}, ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2}})
	env := s.env(cosmos.URL())
	front, _ := url.Parse(tables.URL())
	ep.Host = front.Host
	env["BIFROST_TABLES_CONNECTION"] = tableEndpoint.ReplaceAllLiteralString(conn, "TableEndpoint="+ep.String())
	return env, far{tables: tables, cosmos: cosmos}
}

// TestRunAtLatency runs plain `run` (no flag) at 80 and 150 ms added to
// every Table and Cosmos DB request against an account of 10,000 RU/s:
// every doc verifies, with ≤ 5 % of the write attempts answered 429. With
// BIFROST_BENCH set (./bench.sh, the latency benchmark of docs/performance.md) it runs
// 20,000 executions, taking turns with the other rate runs (measuring),
// and the writes must use ≥ 0.9 (80 ms) and ≥ 0.85 (150 ms) of the budget
// on average. Else a short functional version for ./test.sh (1,000
// executions, --max-ru at the budget, on the functional tests'
// emulators) logs its shares and runs beside the other tests: a share
// measured over seconds on a 2-core machine measures the machine and the
// emulators, single processes, as much as the window (beside the other
// packages' tests the same short run used 0.39 of the budget at 80 ms,
// and 0.54 with no latency added).
func TestRunAtLatency(t *testing.T) {
	t.Parallel()
	n := latencyExecutions()
	short := n < 20000
	s := latencySourceFor(t, short, n)
	var flags []string
	if short {
		flags = []string{"--max-ru", strconv.Itoa(latencyBudget)}
	}
	for _, tc := range []struct {
		latency time.Duration
		want    float64 // share of the budget, full size
	}{{80 * time.Millisecond, 0.9}, {150 * time.Millisecond, 0.85}} {
		t.Run(tc.latency.String(), func(t *testing.T) {
			if !short {
				measuring(t)
			}
			env, f := s.farEnv(t, tc.latency)
			p := f.cosmos
			db := s.newDatabase()
			code, stdout, stderr := resExecute(env, nil, s.runArgs(db, 0, filepath.Join(t.TempDir(), "state"), flags...)...)
			if code != cmd.ExitOK {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			if sum := resSummary(t, stdout); !sum.Complete || sum.DocsWritten < int64(n) {
				t.Fatalf("run: complete %v, %d docs written; want complete with %d", sum.Complete, sum.DocsWritten, n)
			}
			run := figures(p, "client")
			share := run.mean() / latencyBudget
			t.Logf("run %v at %s on an account of %d RU/s, %d executions: %s; %.2f of the budget", flags, tc.latency, latencyBudget, n, run, share)
			if !short && share < tc.want {
				t.Errorf("the run used %.2f of the budget, want ≥ %.2f", share, tc.want)
			}
			if run.share() > 0.05 {
				t.Errorf("%.1f %% of the write attempts were throttled, want ≤ 5 %%", 100*run.share())
			}
			code, _, stderr = resExecute(s.env(""), nil, "verify", "--database", db, "--table-prefix", s.prefix,
				"--blob-container", s.blobs[0], "--quiet")
			if code != cmd.ExitOK {
				t.Fatalf("verify: exit %d\n%s", code, stderr)
			}
		})
	}
}

// newLatencySource loads n generated executions (with their index rows
// and blobs) and an empty Config table: a run has nothing to dead-letter.
// The executions are dated from resNow, the clock of the in-process runs.
func newLatencySource(t *testing.T, n int) *resSource {
	t.Helper()
	return newLatencySourceAt(t, n, resNow)
}

// latencySourceFor is the source of a latency test: at full size on the
// emulators of the tests that measure rates (it runs alone, or taking
// turns), short on the functional tests' emulators (it runs beside them).
func latencySourceFor(t *testing.T, short bool, n int) *resSource {
	t.Helper()
	if !short {
		return newLatencySource(t, n)
	}
	s, tw, blobs := newResWriters(t, "lat", 1)
	return loadLatencySource(t, s, tw, blobs, n, resNow)
}

// newLatencySourceAt is newLatencySource with the executions dated from
// base (the built binary's runs use the real clock: time.Now()).
func newLatencySourceAt(t *testing.T, n int, base time.Time) *resSource {
	t.Helper()
	s, tw, blobs := newRateWriters(t, "lat", 1)
	return loadLatencySource(t, s, tw, blobs, n, base)
}

// loadLatencySource loads n generated executions dated from base, and an
// empty Config table, into s's emulators through tw and blobs.
func loadLatencySource(t *testing.T, s *resSource, tw *azure.TableWriter, blobs resTeeBlobs, n int, base time.Time) *resSource {
	t.Helper()
	ctx := context.Background()
	if err := tw.CreateTable(ctx, s.prefix+fixtures.TableConfig); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := fixtures.LoadGenerated(ctx, tw, blobs, fixtures.GenerateOptions{N: n, Seed: 5, Base: base},
		fixtures.LoadOptions{TablePrefix: s.prefix}); err != nil {
		t.Fatalf("load %d generated executions: %v", n, err)
	}
	t.Logf("loaded %d executions in %s", n, time.Since(began).Round(time.Second))
	return s
}
