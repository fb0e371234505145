package cmd_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// TestVerifyBenchmark measures a full `verify` against the emulators on
// generated executions at two sizes — by default 3,000 and 30,000
// executions, 15,000 and 150,000 rows (BIFROST_BENCH_VERIFY_EXECUTIONS,
// comma-separated) — beside `run` on the same source: each size is loaded
// into tables of its own, `run` migrates it into a database of its own
// (timed), then `verify` judges it (timed, with its peak RSS). It prints
// verify's peak RSS at each size and their ratio, and verify's and run's
// time per row; the acceptance (issue 39) is a ratio of at most 1.25 and
// verify's time per row at most twice run's. It asserts nothing (the
// emulators' speed is the machine's): docs/performance.md has the figures
// and the command. It runs with BIFROST_BENCH=1 only: `BIFROST_BENCH_ONLY=verify
// ./bench.sh`.
func TestVerifyBenchmark(t *testing.T) {
	if os.Getenv("BIFROST_BENCH") != "1" {
		t.Skip("benchmark: set BIFROST_BENCH=1 (see docs/performance.md)")
	}
	sizes := []int{3000, 30000}
	if s := os.Getenv("BIFROST_BENCH_VERIFY_EXECUTIONS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				t.Fatalf("BIFROST_BENCH_VERIFY_EXECUTIONS: %q is not a list of positive numbers", s)
			}
			sizes = append(sizes, n)
		}
	}
	b := newBench(t)
	type point struct {
		rows              int
		run, verify       time.Duration
		verifyRSS, runRSS int64
		verifyCPU         time.Duration
	}
	var points []point
	for _, n := range sizes {
		prefix, blobs, rows := b.load(n)
		db := b.newDatabase()
		state := filepath.Join(t.TempDir(), "state")
		_, runWall, runRSS, _ := b.binRunWith(b.bin, "run", "--database", db, "--table-prefix", prefix, "--blob-container", blobs,
			"--tables", "Entities,Relationships", "--state-dir", state, "--output", "json", "--quiet")
		r := testenv.RunTimed(t, map[string]string{"CosmosDBConnection": testenv.CosmosConnection(t)}, b.bin, "verify", "--database", db,
			"--table-prefix", prefix, "--blob-container", blobs, "--tables", "Entities,Relationships", "--state-dir", state, "--quiet")
		if r.Exit != nil {
			t.Fatalf("verify of %d rows: %v:\n%s\n%s", rows, r.Exit, r.Stdout, r.Stderr)
		}
		lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
		b.dropDatabase(db)
		p := point{rows: rows, run: runWall, runRSS: runRSS, verify: r.Wall, verifyRSS: r.MaxRSS, verifyCPU: r.CPU}
		points = append(points, p)
		b.logf("VERIFY %d rows: %.1fs (%.0f µs/row; run %.1fs, %.0f µs/row: ratio %.2f), peak RSS %.1f MB (run %.1f MB), CPU %.1fs (%.0f µs/row); %s",
			rows, p.verify.Seconds(), perRow(p.verify, rows), p.run.Seconds(), perRow(p.run, rows), p.verify.Seconds()/p.run.Seconds(),
			float64(p.verifyRSS)/1e6, float64(p.runRSS)/1e6, p.verifyCPU.Seconds(), perRow(p.verifyCPU, rows), lines[len(lines)-1])
	}
	if len(points) >= 2 {
		first, last := points[0], points[len(points)-1]
		b.logf("VERIFY peak RSS at %d rows / at %d rows = %.2f (target ≤ 1.25); time per row verify/run at %d rows = %.2f (target ≤ 2)",
			last.rows, first.rows, float64(last.verifyRSS)/float64(first.verifyRSS), last.rows, last.verify.Seconds()/last.run.Seconds())
	}
	t.Logf("results:\n%s", b.report.String())
}

// perRow is d per row in microseconds.
func perRow(d time.Duration, rows int) float64 {
	return float64(d.Microseconds()) / float64(max(rows, 1))
}
