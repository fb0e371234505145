package cmd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLatencyBenchmark measures plain `run` (the built binary, no flag)
// far from the accounts: 20,000 generated executions (BIFROST_LATENCY_N),
// every Table and Cosmos DB request 0, 20, 80 and 150 ms slower (a tenth
// of it as jitter), Cosmos DB an account of 10,000 RU/s. For each latency:
// the share of the budget the writes used, docs/s, the 429 share and the
// binary's peak RSS. It is a benchmark: it only runs with BIFROST_BENCH=1
// (./bench.sh), and asserts only the README's memory bound (peak RSS
// ≤ 96 MB) and that every run completes; TestRunAtLatency holds the
// throughput bars. README.md (Far from the accounts) has its table.
func TestLatencyBenchmark(t *testing.T) {
	if os.Getenv("BIFROST_BENCH") != "1" {
		t.Skip("benchmark: set BIFROST_BENCH=1 (./bench.sh)")
	}
	b := newBench(t)
	n := latencyExecutions()
	s := newLatencySource(t, n)
	b.logf("| latency | share of the 10,000 RU/s budget | docs/s | write attempts throttled | bounded by | peak RSS |")
	b.logf("|---|---|---|---|---|---|")
	for _, latency := range []time.Duration{0, 20 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond} {
		env, f := s.farEnv(t, latency)
		db := s.newDatabase()
		sum, wall, rss, _ := b.binRunEnv(env, b.bin, s.runArgs(db, 0, filepath.Join(t.TempDir(), "state"), "--quiet")...)
		if !sum.Complete || sum.DocsWritten < int64(n) {
			t.Fatalf("%s: complete %v, %d docs written, want %d", latency, sum.Complete, sum.DocsWritten, n)
		}
		run := figures(f.cosmos, "client")
		b.logf("| %d ms | %.2f | %.0f | %.1f %% | %s | %.0f MB |", latency.Milliseconds(), run.mean()/latencyBudget,
			float64(sum.DocsWritten)/wall.Seconds(), 100*run.share(), boundOf(t, b.stdout), float64(rss)/(1<<20))
		if rss > 96<<20 {
			t.Errorf("%s: peak RSS %d MB, want ≤ 96 MB", latency, rss>>20)
		}
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
