#!/usr/bin/env bash
# The bifrost-migrate demo: starts local emulators (Azurite for Table + Blob
# Storage, @vercel/cosmosdb-server for Cosmos DB; installed from npm into a
# cache folder on first use) and the change-feed front before the Cosmos DB
# stand-in (internal/feedfront), loads the sample data in fixtures/, then
# runs init, run --dry-run, run and verify, and rehearses a rollback: a
# demo application (internal/demoapp) completes an execution in Cosmos DB,
# reverse writes it back to the tables, verify agrees. It stops what it
# started. Needs Go and Node.js. If BIFROST_TABLES_CONNECTION and
# CosmosDBConnection point to running emulators, it uses those instead.
# BIFROST_MIGRATE_BIN=PATH runs that bifrost-migrate binary (a release
# binary) instead of building one.
#
# All its Cosmos DB traffic goes through the front
# (BIFROST_COSMOS_FEED_CONNECTION), as an application's would on Azure: the
# front serves the change feed that reverse reads.
#
# Each step is introduced, and long summaries are cut to their totals (the
# README says how long the output is). The run is paced (--max-ru) so that
# it lasts some seconds and the report's charts have several samples to
# draw. What the demo makes is kept in one folder, $BIFROST_DEMO_DIR
# (default: a new bifrost-migrate-demo.XXXXXX in $TMPDIR or /tmp; one
# given must be empty or not exist): the state directory .bifrost-migrate
# (state.json, dead-letter.jsonl, the throughput samples, reverse.json),
# verify's HTML report (report.html, the page an operator attaches to the
# change ticket) and the bifrost-migrate binary it ran, whose `status`
# reads that state without the emulators. Its last line says whether the
# rehearsal's checks held (exit 0) or which failed (exit 1), and names
# that folder. Colours only on a terminal. Its temporary folder (the demo
# application, the emulators' logs) is deleted on exit.
set -uo pipefail
cd "$(dirname "$0")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bifrost-demo.XXXXXX") || exit 1
demo=${BIFROST_DEMO_DIR:-}
if [ -z "$demo" ]; then
	demo=$(mktemp -d "${TMPDIR:-/tmp}/bifrost-migrate-demo.XXXXXX") || exit 1
elif [ -n "$(ls -A "$demo" 2>/dev/null)" ]; then
	echo "demo: BIFROST_DEMO_DIR=$demo is not empty: give a new or empty folder" >&2
	exit 2
fi
mkdir -p "$demo" || exit 1
demo=$(cd "$demo" && pwd)
report="$demo/report.html"
export EMULATOR_LOGS="$tmp/emulator-logs"
mkdir -p "$EMULATOR_LOGS"
. scripts/emulators.sh
trap 'stop_emulators $?; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

if [ -t 1 ]; then
	bold=$'\e[1m' dim=$'\e[2m' reset=$'\e[0m'
else
	bold='' dim='' reset=''
fi

start_emulators || exit 1
export CosmosDBConnection="$BIFROST_COSMOS_FEED_CONNECTION"
if [ -n "${BIFROST_MIGRATE_BIN:-}" ]; then
	# A binary already built (a release binary from scripts/release.sh).
	cp "$BIFROST_MIGRATE_BIN" "$demo/bifrost-migrate" || exit 1
	echo "demo: with $BIFROST_MIGRATE_BIN: $("$demo/bifrost-migrate" version | head -1)"
else
	go build -o "$demo/bifrost-migrate" . || exit 1
fi
go build -o "$tmp/demoapp" ./internal/demoapp || exit 1
# The run's state goes to .bifrost-migrate in the demo's folder, as it
# would in the folder an operator runs from.
cd "$demo" || exit 1

# say prints an explanation, one line per argument, after an empty line.
say() {
	printf '\n'
	printf '%s\n' "$@"
}

# summary keeps, of the first table of run's output (rows per table and
# kind), its header, the per-table "(done)" rows and the total; with -w it
# also drops the table of warnings. Every other line is kept.
summary() {
	awk -v nowarn="${1:-}" '
		!seen && /^TABLE[ \t]/ { intable = 1; seen = 1; print; next }
		intable {
			if ($1 ~ /^(Config|Entities|Relationships)$/) { if ($2 == "(done)") print; next }
			intable = 0
		}
		nowarn && /^WARNING[ \t]/ { inwarn = 1; next }
		inwarn { if (NF == 0) inwarn = 0; next }
		{ print }'
}

# changed keeps, of reverse's table (docs per container and kind), its
# header, the kinds with a doc that is not UNCHANGED (not the per-container
# "(all)" rows) and the total.
changed() {
	awk '
		!seen && /^CONTAINER[ \t]/ { intable = 1; seen = 1; print; next }
		intable {
			if ($1 == "TOTAL") { print; intable = 0 } else if ($2 != "(all)" && $3 != $4) print
			next
		}
		{ print }'
}

# last keeps the last two lines (verify's verdict and its error line).
last() { tail -n 2; }

# step [-s|-S|-c|-l] ARGS...: shows the command, runs it (stderr with
# stdout, so that error lines stay in place) and shows its exit status,
# also kept in $code, with its whole output in $tmp/out. -s cuts run's
# table to its totals (summary), -S too and drops the warnings, -c keeps
# the changed kinds of reverse's table, -l the last two lines. Exit 130
# (Ctrl-C: bifrost-migrate handles the signal itself, so bash would go on)
# ends the demo.
step() {
	local filter=(cat)
	case "$1" in
	-s) filter=(summary) && shift ;;
	-S) filter=(summary -w) && shift ;;
	-c) filter=(changed) && shift ;;
	-l) filter=(last) && shift ;;
	esac
	printf '%s$ bifrost-migrate %s%s\n' "$bold" "$*" "$reset"
	"$demo/bifrost-migrate" "$@" 2>&1 | tee "$tmp/out" | "${filter[@]}"
	code=${PIPESTATUS[0]}
	printf '%s(exit %d)%s\n' "$dim" "$code" "$reset"
	if [ "$code" = 130 ]; then
		exit 130
	fi
}

# app ARGS...: shows and runs the demo application (internal/demoapp), as
# step does for bifrost-migrate.
app() {
	printf '%s$ demoapp %s%s\n' "$bold" "$*" "$reset"
	"$tmp/demoapp" "$@" 2>&1 | tee "$tmp/out"
	code=${PIPESTATUS[0]}
	printf '%s(exit %d)%s\n' "$dim" "$code" "$reset"
}

# check MESSAGE: records MESSAGE as a failed check unless the last
# command's status ($?) was 0.
failed=()
check() {
	[ $? = 0 ] || failed+=("$1")
}

say "The fixtures hold rows that cannot be migrated, on purpose: run reports them" \
	"as dead letters (exit 3) and verify as not migrated; everything else verifies."

say "1. Load the sample data: Bifrost rows of every kind, awkward ones included," \
	"   into the tables Config, Entities and Relationships, and a few result blobs."
step --quiet fixtures load

say "2. Create the Cosmos DB database and containers (a second init changes nothing)."
step --quiet init

# The fixtures are dated November 2026; --execution-ttl full keeps their
# executions whatever today's date is (the default, remaining, would count
# them as expired once 14 days have passed).
say "3. Dry run: read and transform every row, write nothing. Rows per table and" \
	"   disposition, data-quality warnings, then the plan."
step -s --quiet run --dry-run --execution-ttl full
say "Exit 3 predicts dead letters: the deliberately bad rows listed above."

say "4. The run: the same rows, written to Cosmos DB and Blob Storage, at most" \
	"   15 request units a second (--max-ru), so that it takes some seconds and" \
	"   the report's charts have several samples to draw."
step -S --quiet run --execution-ttl full --max-ru 15
say "Exit 3: the bad rows were dead-lettered and everything else was migrated." \
	"Each dead letter is a line of $demo/.bifrost-migrate/dead-letter.jsonl:" \
	"its table, keys, reason, and the row with secret values as \"***\"."

say "5. Verify: compare every row with what Cosmos DB and Blob Storage hold now." \
	"   The bad rows are not there (DEAD-LETTER); every other row must match its" \
	"   doc: MISSING, DIFFERENT and ORPHANS 0."
step -s --quiet verify --execution-ttl full

# The rollback rehearsal: the Running execution of the fixtures, completed
# by the application in Cosmos DB after the cutover.
org=2f1a9c4e-8b3d-4e6f-a1c2-5d7e9f0b3a68
execution=0c537813-4b06-5b2c-8e7c-f7706176ae40
verdict='verify: 6 row(s) not migrated; 0 missing, 0 different, 0 orphan doc(s)'

# reverse --since rounds down to the second: wait for the next one, so
# that the docs run wrote are all older than the cutover.
sleep 1
cutover=$(date -u +%Y-%m-%dT%H:%M:%SZ)
say "6. Rollback rehearsal. Cut over at $cutover: the application (demoapp, with the" \
	"   Cosmos DB SDK) now writes to Cosmos DB; it completes the Running execution."
app complete --org "$org" "$execution"
[ "$code" = 0 ]
check "demoapp could not complete the execution"

say "7. Roll back: reverse reads Cosmos DB's change feed since the cutover and" \
	"   writes back what changed, as the Table-based application would have."
step -c --quiet reverse --since "$cutover" --execution-ttl full
[ "$code" = 0 ] && grep -Eq '^executions +execution +[0-9]+ +[0-9]+ +1 ' "$tmp/out"
check "reverse did not exit 0 with one execution synced"

say "8. Verify again: the same 6 dead letters as in 5, and every other row matches."
step -l --quiet verify --execution-ttl full
[ "$code" = 3 ] && grep -qxF "$verdict" "$tmp/out"
check "verify did not report: $verdict"

say "9. The application, back on the tables, finds the execution completed."
app show --org "$org" "$execution"
[ "$code" = 0 ] && grep -q "^application on the tables: execution $execution is Success, .*; not in the status:Running index$" "$tmp/out"
check "the Entities row is not Success, or the status:Running index still lists it"

say "10. The report to sign the cutover off with: one HTML page (verdict, rows per" \
	"    disposition, throughput and RU/s over the run, dead letters with their" \
	"    reasons, access patterns, settings and versions), self-contained."
step -l --quiet verify --execution-ttl full --report "$report"
[ "$code" = 3 ] && grep -q '<svg' "$report"
check "verify did not write the HTML report"
# The throughput chart ("Docs written") draws one point per sample; one
# sample alone is drawn as two, a flat line.
points=$(sed -n '/aria-label="Docs written over time"/,/<polyline/s/.*<polyline points="\([^"]*\)".*/\1/p' "$report" | wc -w)
[ "$points" -gt 2 ]
check "the report's throughput chart has $points point(s), not a curve of several samples"

say "The state, the dead letters and the report are kept in $demo:" \
	"  .bifrost-migrate/   state.json, dead-letter.jsonl, samples.jsonl, reverse.json" \
	"  report.html         verify's report" \
	"  bifrost-migrate     the binary; \`./bifrost-migrate status\` there reads the state (no emulator needed)"
printf '\n'
if [ ${#failed[@]} -gt 0 ]; then
	sep='Rehearsal FAILED: '
	for f in "${failed[@]}"; do
		printf '%s%s' "$sep" "$f"
		sep='; '
	done
	printf '. State, dead letters and report in %s\n' "$demo"
	exit 1
fi
printf '%s\n' "Rollback rehearsal checked: the completion is back in the tables (Success, no longer indexed as Running), and verify agrees. State, dead letters and report in $demo"

