package cmd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/fixtures"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// TestLatencyBenchmark measures plain `run` (the built binary, no flag)
// far from the accounts: 20,000 generated executions (BIFROST_LATENCY_N),
// every Table and Cosmos DB request 0, 20, 80 and 150 ms slower (a tenth
// of it as jitter), Cosmos DB an account of 10,000 RU/s. For each latency:
// the share of the budget the writes used, docs/s, the 429 share and the
// binary's peak RSS; then the time of `verify` over what the run wrote,
// at the same latency, beside the time of a raw listing of the tables
// (page after page, one table after the other) through the same proxy.
// It is a benchmark: it only runs with BIFROST_BENCH=1
// (./bench.sh), and asserts only the memory bound (peak RSS ≤ 160 MB:
// the collector lets the heap grow by as much as is live, 64 MiB at the
// least, and more docs are in flight far away) and that every run
// completes; TestRunAtLatency holds the throughput
// bars. docs/performance.md (Far from the accounts) has its table.
func TestLatencyBenchmark(t *testing.T) {
	testenv.Benchmark(t)
	b := newBench(t)
	n := latencyExecutions()
	s := newLatencySourceAt(t, n, time.Now().UTC())
	b.logf("| latency | share of the 10,000 RU/s budget | docs/s | write attempts throttled | bounded by | peak RSS | verify | raw table listing | verify ÷ (verify at 0 ms + listing) |")
	b.logf("|---|---|---|---|---|---|---|---|---|")
	var verify0 time.Duration
	for _, latency := range benchLatencies(t) {
		env, f := s.farEnv(t, latency)
		db := s.newDatabase()
		sum, wall, rss, _ := b.binRunEnv(env, b.bin, s.runArgs(db, 0, filepath.Join(t.TempDir(), "state"), "--quiet")...)
		if !sum.Complete || sum.DocsWritten < int64(n) {
			t.Fatalf("%s: complete %v, %d docs written, want %d", latency, sum.Complete, sum.DocsWritten, n)
		}
		run := figures(f.cosmos, "client")
		bound := boundOf(t, b.stdout)
		if rss > 160<<20 {
			t.Errorf("%s: peak RSS %d MB, want ≤ 160 MB", latency, rss>>20)
		}
		verify, listing := s.verifyFar(b, env, db)
		if latency == 0 {
			verify0 = verify
		}
		b.logf("| %d ms | %.2f | %.0f | %.1f %% | %s | %.0f MB | %.1f s | %.1f s | %.2f |", latency.Milliseconds(), run.mean()/latencyBudget,
			float64(sum.DocsWritten)/wall.Seconds(), 100*run.share(), bound, float64(rss)/(1<<20),
			verify.Seconds(), listing.Seconds(), verify.Seconds()/(verify0+listing).Seconds())
		b.dropDatabase(db)
	}
	t.Logf("results (%d executions):\n%s", n, b.report.String())
}

// boundOf is what the summary line of a run's --output json says bounded
// the writes.
func boundOf(t *testing.T, stdout string) string {
	t.Helper()
	var sum struct {
		RU struct {
			Bound        string  `json:"bound"`
			LatencyP50Ms float64 `json:"latencyP50Ms"`
		} `json:"ru"`
	}
	lastLine(t, stdout, &sum)
	return fmt.Sprintf("%s (p50 %.0f ms)", sum.RU.Bound, sum.RU.LatencyP50Ms)
}

// verifyFar runs the built binary's verify of db with env (the far
// accounts), then lists the source tables raw through env's Table
// endpoint; it returns the time of each.
func (s *resSource) verifyFar(b *bench, env map[string]string, db string) (verify, listing time.Duration) {
	b.t.Helper()
	verify, _, _ = b.binExec(env, b.bin, "verify", "--database", db, "--table-prefix", s.prefix, "--blob-container", s.blobs[0], "--quiet")
	m := tableEndpoint.FindStringSubmatch(env["BIFROST_TABLES_CONNECTION"])
	if m == nil {
		b.t.Fatal("no TableEndpoint in the far storage connection string")
	}
	began := time.Now()
	for _, table := range fixtures.Tables() {
		b.rawListAt(context.Background(), strings.TrimSuffix(m[1], "/"), s.prefix+table)
	}
	return verify, time.Since(began)
}

// benchLatencies are the latencies TestLatencyBenchmark measures:
// BIFROST_LATENCIES (milliseconds, comma-separated), else 0, 20, 80 and
// 150 ms.
func benchLatencies(t *testing.T) []time.Duration {
	t.Helper()
	var ls []time.Duration
	for _, ms := range testenv.Numbers(t, "BIFROST_LATENCIES", 0, 0, 20, 80, 150) {
		ls = append(ls, time.Duration(ms)*time.Millisecond)
	}
	return ls
}
