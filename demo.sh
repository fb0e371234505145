#!/usr/bin/env bash
# The bifrost-migrate demo: starts local emulators (Azurite for Table + Blob
# Storage, @vercel/cosmosdb-server for Cosmos DB; installed from npm into a
# cache folder on first use), loads the sample data in fixtures/, then runs
# init, run --dry-run, run and verify, and stops the emulators it started.
# Needs Go and Node.js. If BIFROST_TABLES_CONNECTION and CosmosDBConnection
# point to running emulators, it uses those instead.
#
# It prints about a hundred lines: each step is introduced, and long
# summaries are cut to their totals. Colours only on a terminal. Its
# temporary folder (the binary, the run's state, the emulators' logs) is
# deleted on exit.
set -uo pipefail
cd "$(dirname "$0")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bifrost-demo.XXXXXX") || exit 1
export EMULATOR_LOGS="$tmp/emulator-logs"
mkdir -p "$EMULATOR_LOGS"
. scripts/emulators.sh
trap 'stop_emulators; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

if [ -t 1 ]; then
	bold=$'\e[1m' dim=$'\e[2m' reset=$'\e[0m'
else
	bold='' dim='' reset=''
fi

start_emulators || exit 1
go build -o "$tmp/bifrost-migrate" . || exit 1
# The run's state goes to .bifrost-migrate in the temporary folder, as it
# would in the folder an operator runs from.
cd "$tmp" || exit 1

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

# step [-s|-S] ARGS...: shows the command, runs it (stderr with stdout, so
# that error lines stay in place) and shows its exit status. -s cuts run's
# table to its totals (summary), -S too and drops the warnings. Exit 130
# (Ctrl-C: bifrost-migrate handles the signal itself, so bash would go on)
# ends the demo.
step() {
	local filter=(cat) code
	case "$1" in
	-s) filter=(summary) && shift ;;
	-S) filter=(summary -w) && shift ;;
	esac
	printf '%s$ bifrost-migrate %s%s\n' "$bold" "$*" "$reset"
	"$tmp/bifrost-migrate" "$@" 2>&1 | "${filter[@]}"
	code=${PIPESTATUS[0]}
	printf '%s(exit %d)%s\n' "$dim" "$code" "$reset"
	if [ "$code" = 130 ]; then
		exit 130
	fi
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

say "4. The run: the same rows, written to Cosmos DB and Blob Storage."
step -S --quiet run --execution-ttl full
say "Exit 3: the bad rows were dead-lettered and everything else was migrated." \
	"Each dead letter is a line of .bifrost-migrate/dead-letter.jsonl: its table," \
	"keys, reason, and the row with secret values as \"***\"."

say "5. Verify: compare every row with what Cosmos DB and Blob Storage hold now." \
	"   The bad rows are not there (DEAD-LETTER); every other row must match its" \
	"   doc: MISSING, DIFFERENT and ORPHANS 0."
step -s --quiet verify --execution-ttl full
