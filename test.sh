#!/usr/bin/env bash
# Runs every test of bifrost-migrate: go vet, then unit and integration tests
# against local emulators (Azurite for Table + Blob Storage,
# @vercel/cosmosdb-server for Cosmos DB). Needs Go and Node.js, not Docker.
# It installs the emulators into a cache folder, starts them on free
# loopback ports, and stops them on any exit. If BIFROST_TABLES_CONNECTION
# and CosmosDBConnection already point to running emulators, it uses those.
# The change-feed front the emulators script also starts
# (BIFROST_COSMOS_FEED_CONNECTION) is not used by the tests: they put their
# own fault proxy before the stand-in where they need a change feed.
# Extra arguments are passed to `go test` (e.g. ./test.sh -run TestReader, or
# ./test.sh -run TestInit ./cmd/); without a package argument it tests ./...
set -euo pipefail
cd "$(dirname "$0")"
. scripts/emulators.sh
trap 'stop_emulators $?' EXIT
trap 'exit 130' INT TERM

start_emulators rates
export BIFROST_INTEGRATION=1

echo "== go vet ./..." >&2
go vet ./...
echo "== go mod tidy -diff" >&2
# From the module cache alone when it holds every module tidy reads (no
# network on a warm cache); only a cold cache asks the module proxy.
if ! tidy=$(GOFLAGS=-mod=mod GOPROXY=off go mod tidy -diff 2>&1); then
	case "$tidy" in
	*"GOPROXY=off"* | *"module lookup disabled"*) tidy=$(go mod tidy -diff 2>&1) ;;
	*) false ;;
	esac || {
		printf '%s\n' "$tidy" >&2
		echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit the result" >&2
		exit 1
	}
fi
echo "== go test ./..." >&2
pkgs=(./...)
for a in "$@"; do
	case "$a" in ./* | github.com/*) pkgs=() ;; esac
done
# One go test for every package: the tests that measure a rate take turns
# on emulators of their own (start_emulators rates), and every other test
# is functional, so the packages may run side by side.
go test -count=1 -timeout 60m -parallel 8 "$@" "${pkgs[@]}"
