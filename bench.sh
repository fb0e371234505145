#!/usr/bin/env bash
# Runs the benchmarks and the long measurements of bifrost-migrate against
# local emulators, as test.sh runs the tests (Go and Node.js, no Docker):
#
#   - TestRunAtLatency and TestWindowAtLatency at full size: plain `run`
#     of 20,000 executions at 80 and 150 ms added to every request, and
#     `replay` and `reverse` over 10,000 changes at 80 ms, against a
#     simulated account of 10,000 RU/s (./test.sh runs short versions);
#   - TestLatencyBenchmark: the share of the budget, docs/s and peak RSS of
#     `run` at 0, 20, 80 and 150 ms (docs/performance.md, "Far from the accounts");
#   - TestRunBenchmark: `run` and `run --dry-run` against the raw ceilings,
#     and peak RSS (docs/performance.md, "run");
#   - TestVerifyBenchmark: a full `verify` of 15,000 and 150,000 rows
#     beside `run` on the same source: peak RSS and time per row, and the
#     cutover's write-stop window (docs/performance.md, "verify");
#   - TestScaleBenchmark: `run`, `run --dry-run`, `verify` and the
#     cutover's write-stop window at 1 and 5 million rows against services
#     in the test process, beside the SDK alone (docs/performance.md, "At
#     any size" and "The write-stop window");
#   - TestPassBenchmark: one `replay --since` pass over 100 changed rows
#     on 15,000 and 150,000 generated executions, beside one plain scan
#     per table (docs/performance.md, "A pass"); BIFROST_BENCH_BASE, a
#     binary built from another commit, adds that binary's pass.
#
# Extra arguments go to `go test` (e.g. ./bench.sh -run TestLatencyBenchmark).
# Takes about 55 minutes on a 2-core machine. BIFROST_BENCH_ONLY=scale runs
# the scale benchmark alone (about 25 minutes), without the emulators;
# BIFROST_BENCH_ONLY=verify the verify benchmark alone (about 5 minutes):
#
#   BIFROST_BENCH_ONLY=scale ./bench.sh
#   BIFROST_BENCH_ONLY=scale BIFROST_SCALE_ROWS=1000000,5000000,10000000 ./bench.sh
#   BIFROST_BENCH_ONLY=scale BIFROST_SCALE_MODES=window ./bench.sh   # the write-stop window alone, at 1 and 5 million rows and their ratio (about 12 minutes)
#   BIFROST_BENCH_ONLY=verify ./bench.sh
set -euo pipefail
cd "$(dirname "$0")"
if [ "${BIFROST_BENCH_ONLY:-}" = scale ]; then
	# Its services run in the test process: no emulators.
	export BIFROST_BENCH=1
	run=(-run 'TestScaleBenchmark$')
	for a in "$@"; do
		case "$a" in -run | -run=*) run=() ;; esac
	done
	exec go test -count=1 -timeout 120m -v "${run[@]}" "$@" ./cmd/
fi
. scripts/emulators.sh
trap 'stop_emulators $?' EXIT
trap 'exit 130' INT TERM

start_emulators rates
export BIFROST_INTEGRATION=1 BIFROST_BENCH=1
# TestRunBenchmark at the size docs/performance.md's table was measured at.
export BIFROST_BENCH_N="${BIFROST_BENCH_N:-20000}"
run=(-run 'TestRunAtLatency|TestWindowAtLatency|TestLatencyBenchmark|TestRunBenchmark|TestVerifyBenchmark|TestScaleBenchmark|TestPassBenchmark')
if [ "${BIFROST_BENCH_ONLY:-}" = verify ]; then
	run=(-run 'TestVerifyBenchmark$')
fi
for a in "$@"; do
	case "$a" in -run | -run=*) run=() ;; esac
done
go test -count=1 -timeout 150m -v "${run[@]}" "$@" ./cmd/
