#!/usr/bin/env bash
# shellcheck shell=bash
# Local emulator stack. test.sh, bench.sh and demo.sh source it; run on
# its own, it starts the emulators for rehearsing by hand and leaves them
# running:
#
#   scripts/emulators.sh start   start them; print the exports of their settings on stdout
#   scripts/emulators.sh env     print the exports of the running ones again
#   scripts/emulators.sh stop    stop them and remove their folder
#
# `eval "$(scripts/emulators.sh env)"` sets them in a shell. Their pids,
# logs and settings are in one folder, BIFROST_EMULATORS_DIR (default
# bifrost-emulators-UID in TMPDIR or /tmp), which start names; start
# ignores any emulators the environment points to and starts its own.
#
# start_emulators installs Azurite (Table + Blob) and @vercel/cosmosdb-server
# from npm into a cache folder (pinned versions), starts them on free
# loopback ports and exports the connection settings bifrost-migrate reads:
# BIFROST_TABLES_CONNECTION and CosmosDBConnection (the stand-in itself,
# which has no change feed). It then starts the change-feed front
# (internal/feedfront, built with go) before the stand-in and exports
# BIFROST_COSMOS_FEED_CONNECTION for it: Cosmos DB traffic sent there
# reaches the same stand-in, and the change feed that `reverse` reads is
# served too. When BIFROST_TABLES_CONNECTION and CosmosDBConnection are
# already set and answer, it reuses them and starts no emulator; it reuses
# BIFROST_COSMOS_FEED_CONNECTION too when it is set and answers, and
# otherwise starts a front before the reused stand-in (an https:// Cosmos
# DB endpoint, the Linux emulator's or Azure's, serves a change feed of its
# own: the feed connection is then CosmosDBConnection). stop_emulators
# [STATUS] stops only what start_emulators started, and removes the logs'
# temporary folder unless STATUS (the caller's exit status) is not 0;
# callers run it from an EXIT trap with $?.

AZURITE_VERSION=3.37.0
COSMOSDB_SERVER_VERSION=1.0.1
EMULATOR_CACHE=${BIFROST_EMULATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bifrost-migrate/emulators-$AZURITE_VERSION-$COSMOSDB_SERVER_VERSION}
EMULATOR_PIDS=()
SPAWNED_PORTS=()
EMULATOR_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FEED_FRONT_DIR=
# The emulators' logs: a temporary folder, removed by stop_emulators,
# unless EMULATOR_LOGS names one to keep.
EMULATOR_LOGS_OWNED=
# Run on its own (not sourced): emulators_main, at the end, chooses the
# folder for the logs.
EMULATORS_MAIN=
[ "${BASH_SOURCE[0]}" = "$0" ] && EMULATORS_MAIN=1
if [ -z "${EMULATOR_LOGS:-}" ] && [ -z "$EMULATORS_MAIN" ]; then
	EMULATOR_LOGS=$(mktemp -d "${TMPDIR:-/tmp}/bifrost-emulators.XXXXXX")
	EMULATOR_LOGS_OWNED=1
fi

# The published well-known keys of the emulators (not secrets).
DEV_STORAGE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
EMULATOR_COSMOS_KEY='C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=='

log() { printf '%s\n' "$*" >&2; }

install_emulators() {
	local bin="$EMULATOR_CACHE/node_modules/.bin"
	if [ -x "$bin/azurite-table" ] && [ -x "$bin/azurite-blob" ] && [ -x "$bin/cosmosdb-server" ]; then
		return 0
	fi
	command -v npm >/dev/null || { log "npm not found: install Node.js 20+"; return 1; }
	# Install into a fresh folder and rename it into place, so that a
	# concurrent or interrupted install never leaves a half-written cache.
	local parent tmp
	parent=$(dirname "$EMULATOR_CACHE")
	mkdir -p "$parent"
	tmp=$(mktemp -d "$parent/install.XXXXXX")
	log "installing azurite@$AZURITE_VERSION and @vercel/cosmosdb-server@$COSMOSDB_SERVER_VERSION into $EMULATOR_CACHE"
	echo '{"name":"bifrost-emulators","private":true}' >"$tmp/package.json"
	if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error \
		"azurite@$AZURITE_VERSION" "@vercel/cosmosdb-server@$COSMOSDB_SERVER_VERSION" >&2; then
		rm -rf "$tmp"
		log "npm install failed"
		return 1
	fi
	rm -rf "$EMULATOR_CACHE.old"
	[ -d "$EMULATOR_CACHE" ] && mv "$EMULATOR_CACHE" "$EMULATOR_CACHE.old.$$" 2>/dev/null
	# POSIX mv (no GNU -T): when another install won the race, mv puts
	# ours inside its folder, or fails; either way, use its result.
	mv "$tmp" "$EMULATOR_CACHE" 2>/dev/null || rm -rf "$tmp"
	rm -rf "$EMULATOR_CACHE/$(basename "$tmp")" "$EMULATOR_CACHE.old.$$"
	[ -x "$bin/azurite-table" ] && [ -x "$bin/cosmosdb-server" ]
}

# free_ports N prints N TCP ports that are free on 127.0.0.1 right now,
# one a line (held together while chosen, so they differ).
free_ports() {
	node -e 'const n=+process.argv[1],net=require("net"),ss=[];let left=n;for(let i=0;i<n;i++){const s=net.createServer();ss.push(s);s.listen(0,"127.0.0.1",()=>{if(--left===0){for(const x of ss){console.log(x.address().port);x.close()}}})}' "$1"
}

# wait_port HOST PORT NAME: waits up to 60 s for a listener.
wait_port() {
	local i=0
	while [ "$i" -lt 600 ]; do
		if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	log "$3 did not start on $1:$2; its log:"
	cat "$EMULATOR_LOGS/$3.log" >&2 || true
	return 1
}

# reachable URL: any HTTP answer counts.
reachable() {
	node -e 'const u=new URL(process.argv[1]);const m=u.protocol==="https:"?require("https"):require("http");const r=m.get(u,{rejectUnauthorized:false,timeout:3000},x=>{process.exit(0)});r.on("error",()=>process.exit(1));r.on("timeout",()=>process.exit(1))' "$1" 2>/dev/null
}

# conn_value CONNECTION NAME prints the value of NAME=… in a connection
# string.
conn_value() {
	printf '%s' "$1" | tr ';' '\n' | sed -n "s/^$2=//p"
}

# start_feed_front builds internal/feedfront and starts it on a free port
# before the Cosmos DB stand-in of CosmosDBConnection, and exports
# BIFROST_COSMOS_FEED_CONNECTION: CosmosDBConnection with the front's
# endpoint (the same key: the front forwards the client's signature).
start_feed_front() {
	local cosmos_ep port
	cosmos_ep=$(conn_value "$CosmosDBConnection" AccountEndpoint)
	command -v go >/dev/null || { log "go not found: the change-feed front (internal/feedfront) is a Go program"; return 1; }
	if [ -z "$FEED_FRONT_DIR" ]; then
		FEED_FRONT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/bifrost-feedfront.XXXXXX") || return 1
	fi
	if ! (cd "$EMULATOR_REPO" && go build -o "$FEED_FRONT_DIR/feedfront" ./internal/feedfront) >&2; then
		log "building the change-feed front (internal/feedfront) failed"
		return 1
	fi
	port=$(free_ports 1) || return 1
	"$FEED_FRONT_DIR/feedfront" --target "$cosmos_ep" --addr "127.0.0.1:$port" >"$EMULATOR_LOGS/feedfront.log" 2>&1 &
	EMULATOR_PIDS+=($!)
	wait_port 127.0.0.1 "$port" feedfront || return 1
	export BIFROST_COSMOS_FEED_CONNECTION="${CosmosDBConnection/"AccountEndpoint=$cosmos_ep"/AccountEndpoint=http://127.0.0.1:$port/}"
	log "change-feed front: http://127.0.0.1:$port/ before $cosmos_ep (BIFROST_COSMOS_FEED_CONNECTION)"
}

# reuse_feed_front keeps a BIFROST_COSMOS_FEED_CONNECTION that answers;
# otherwise, before a reused http:// stand-in, it starts a front, and for
# an https:// endpoint (the Linux emulator, Azure: a change feed of their
# own) it exports CosmosDBConnection as the feed connection.
reuse_feed_front() {
	local feed_ep cosmos_ep
	feed_ep=$(conn_value "${BIFROST_COSMOS_FEED_CONNECTION:-}" AccountEndpoint)
	if [ -n "$feed_ep" ] && reachable "$feed_ep"; then
		log "reusing the change-feed connection the environment points to ($feed_ep)"
		return 0
	fi
	cosmos_ep=$(conn_value "$CosmosDBConnection" AccountEndpoint)
	case "$cosmos_ep" in
	http://*) start_feed_front ;;
	*)
		export BIFROST_COSMOS_FEED_CONNECTION="$CosmosDBConnection"
		log "$cosmos_ep serves its own change feed: BIFROST_COSMOS_FEED_CONNECTION is CosmosDBConnection"
		;;
	esac
}

# start_emulators [rates] starts the emulators (or reuses the ones the
# environment points to) and the change-feed front. With "rates" it also
# starts a second set for the tests that measure rates and exports
# BIFROST_RATES_TABLES_CONNECTION and BIFROST_RATES_COSMOS_CONNECTION for
# it: each emulator is one process serving one request at a time, and a
# functional test's scan of a whole table or container in the shared set
# would stall a measured run's writes. Without the second set (reused
# emulators) those tests use the shared one. Both sets start at once, and
# the front is built while they start.
start_emulators() {
	if [ -n "${BIFROST_TABLES_CONNECTION:-}" ] && [ -n "${CosmosDBConnection:-}" ]; then
		local table_ep cosmos_ep
		table_ep=$(conn_value "$BIFROST_TABLES_CONNECTION" TableEndpoint)
		cosmos_ep=$(conn_value "$CosmosDBConnection" AccountEndpoint)
		if [ -n "$table_ep" ] && [ -n "$cosmos_ep" ] && reachable "$table_ep" && reachable "$cosmos_ep"; then
			log "reusing the emulators the environment points to ($table_ep, $cosmos_ep)"
			[ "${1:-}" = rates ] && log "the tests that measure rates use the emulators the environment points to"
			reuse_feed_front
			return
		fi
		log "the emulators the environment points to do not answer; starting our own"
	fi
	install_emulators || return 1
	spawn_emulators "" || return 1
	export BIFROST_TABLES_CONNECTION="$SPAWNED_STORAGE" CosmosDBConnection="$SPAWNED_COSMOS"
	local where=$SPAWNED_WHERE
	if [ "${1:-}" = rates ]; then
		spawn_emulators rates- || return 1
		export BIFROST_RATES_TABLES_CONNECTION="$SPAWNED_STORAGE" BIFROST_RATES_COSMOS_CONNECTION="$SPAWNED_COSMOS"
	fi
	start_feed_front || return 1
	await_spawned || return 1
	log "emulators: $where (logs in $EMULATOR_LOGS)"
	[ "${1:-}" = rates ] && log "emulators for the tests that measure rates: $SPAWNED_WHERE"
	return 0
}

# spawn_emulators NAME starts Azurite (Blob, Table) and the Cosmos DB
# stand-in on free loopback ports, their logs named with NAME, and sets
# SPAWNED_STORAGE and SPAWNED_COSMOS to their connection strings and
# SPAWNED_WHERE to their addresses. It does not wait for them to listen:
# await_spawned does. Azurite's telemetry is off (--disableTelemetry): it
# sends a report per request, and with no way out it keeps them in the
# temporary folder and rescans the pile, which cost each Azurite process
# a few % of a core even idle and a share of every request's CPU (the
# whole test suite ran 15 % faster without it on a 2-core machine).
spawn_emulators() {
	local name=$1 blob_port table_port cosmos_port ports
	ports=$(free_ports 3) || return 1
	{ read -r blob_port && read -r table_port && read -r cosmos_port; } <<<"$ports" || return 1
	"$EMULATOR_CACHE/node_modules/.bin/azurite-blob" --silent --blobHost 127.0.0.1 --blobPort "$blob_port" \
		--skipApiVersionCheck --disableProductStyleUrl --inMemoryPersistence --disableTelemetry >"$EMULATOR_LOGS/${name}azurite-blob.log" 2>&1 &
	EMULATOR_PIDS+=($!)
	"$EMULATOR_CACHE/node_modules/.bin/azurite-table" --silent --tableHost 127.0.0.1 --tablePort "$table_port" \
		--skipApiVersionCheck --disableProductStyleUrl --inMemoryPersistence --disableTelemetry >"$EMULATOR_LOGS/${name}azurite-table.log" 2>&1 &
	EMULATOR_PIDS+=($!)
	"$EMULATOR_CACHE/node_modules/.bin/cosmosdb-server" --no-ssl --host 127.0.0.1 --port "$cosmos_port" \
		>"$EMULATOR_LOGS/${name}cosmosdb-server.log" 2>&1 &
	EMULATOR_PIDS+=($!)
	SPAWNED_PORTS+=("$blob_port ${name}azurite-blob" "$table_port ${name}azurite-table" "$cosmos_port ${name}cosmosdb-server")
	SPAWNED_STORAGE="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$DEV_STORAGE_KEY;BlobEndpoint=http://127.0.0.1:$blob_port/devstoreaccount1;TableEndpoint=http://127.0.0.1:$table_port/devstoreaccount1;"
	SPAWNED_COSMOS="AccountEndpoint=http://127.0.0.1:$cosmos_port/;AccountKey=$EMULATOR_COSMOS_KEY;"
	SPAWNED_WHERE="blob 127.0.0.1:$blob_port, table 127.0.0.1:$table_port, cosmos http://127.0.0.1:$cosmos_port"
}

# await_spawned waits for every emulator spawn_emulators started to listen.
await_spawned() {
	local p
	for p in "${SPAWNED_PORTS[@]}"; do
		wait_port 127.0.0.1 "${p%% *}" "${p#* }" || return 1
	done
	SPAWNED_PORTS=()
}

stop_emulators() {
	local pid i
	for pid in "${EMULATOR_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	# Azurite can stay up after a second signal (Ctrl-C reached it, then
	# this SIGTERM): give each emulator 5 s, then SIGKILL, so that the
	# caller's exit never hangs.
	for pid in "${EMULATOR_PIDS[@]}"; do
		i=0
		while [ "$i" -lt 50 ] && kill -0 "$pid" 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	EMULATOR_PIDS=()
	if [ -n "$FEED_FRONT_DIR" ]; then
		rm -rf "$FEED_FRONT_DIR"
		FEED_FRONT_DIR=
	fi
	if [ -n "$EMULATOR_LOGS_OWNED" ]; then
		if [ "${1:-0}" = 0 ]; then
			rm -rf "$EMULATOR_LOGS"
		else
			log "the emulators' logs are kept in $EMULATOR_LOGS (the command failed)"
		fi
		EMULATOR_LOGS_OWNED=
	fi
}

# emulators_dir prints the folder of the emulators `start` leaves running.
emulators_dir() {
	printf '%s\n' "${BIFROST_EMULATORS_DIR:-${TMPDIR:-/tmp}/bifrost-emulators-$(id -u)}"
}

# ours PID succeeds when PID runs one of the programs start starts (so
# that a pid reused since by another program is never signalled).
ours() {
	local args
	args=$(ps -o args= -p "$1" 2>/dev/null) || return 1
	case "$args" in *azurite-* | *cosmosdb-server* | *feedfront*) return 0 ;; esac
	return 1
}

# running DIR succeeds when DIR lists pids and every one still runs.
running() {
	local pid n=0
	[ -s "$1/pids" ] || return 1
	while read -r pid; do
		ours "$pid" || return 1
		n=$((n + 1))
	done <"$1/pids"
	[ "$n" -gt 0 ]
}

# stop_dir DIR stops what DIR lists (those still running) and removes DIR.
stop_dir() {
	local pid
	EMULATOR_PIDS=()
	if [ -f "$1/pids" ]; then
		while read -r pid; do
			ours "$pid" && EMULATOR_PIDS+=("$pid")
		done <"$1/pids"
	fi
	FEED_FRONT_DIR=
	stop_emulators
	rm -rf "$1"
}

# emulators_main COMMAND: start, env or stop (see the top of this file).
emulators_main() {
	local dir
	dir=$(emulators_dir)
	case "${1:-}" in
	start)
		if running "$dir"; then
			log "emulators already running (pids, logs and settings in $dir); 'scripts/emulators.sh stop' stops them"
			cat "$dir/env"
			return 0
		fi
		stop_dir "$dir"
		mkdir -p "$dir/logs" "$dir/feedfront" && chmod 700 "$dir" || return 1
		EMULATOR_LOGS=$dir/logs FEED_FRONT_DIR=$dir/feedfront
		unset BIFROST_TABLES_CONNECTION CosmosDBConnection BIFROST_COSMOS_FEED_CONNECTION
		if ! start_emulators; then
			stop_emulators 1
			log "the emulators did not start; their logs are in $dir/logs"
			return 1
		fi
		printf '%s\n' "${EMULATOR_PIDS[@]}" >"$dir/pids"
		{
			echo "export BIFROST_TABLES_CONNECTION='$BIFROST_TABLES_CONNECTION'"
			echo "export CosmosDBConnection='$CosmosDBConnection'"
			echo "export BIFROST_COSMOS_FEED_CONNECTION='$BIFROST_COSMOS_FEED_CONNECTION'"
		} >"$dir/env"
		cat "$dir/env"
		log "emulators running until 'scripts/emulators.sh stop'; pids, logs and settings in $dir"
		log "in a shell: eval \"\$(scripts/emulators.sh env)\"; for reverse, send Cosmos DB traffic through the change-feed front: export CosmosDBConnection=\"\$BIFROST_COSMOS_FEED_CONNECTION\""
		;;
	env)
		if ! running "$dir"; then
			log "no emulators running (nothing in $dir): 'scripts/emulators.sh start' starts them"
			return 1
		fi
		cat "$dir/env"
		;;
	stop)
		if [ ! -e "$dir" ]; then
			log "no emulators to stop (no $dir)"
			return 0
		fi
		stop_dir "$dir"
		log "emulators stopped; $dir removed"
		;;
	*)
		log "usage: scripts/emulators.sh start|env|stop (or source it: see the comments at its top)"
		return 2
		;;
	esac
}

if [ -n "$EMULATORS_MAIN" ]; then
	emulators_main "$@"
	exit
fi
