#!/usr/bin/env bash
# Builds the release binaries of bifrost-migrate for linux, darwin and
# windows on amd64 and arm64, with a SHA256SUMS file, into dist/ (or --out
# DIR):
#
#   dist/bifrost-migrate_VERSION_linux_amd64      … _darwin_arm64, _windows_amd64.exe, …
#   dist/SHA256SUMS                               (sha256sum -c SHA256SUMS checks them)
#
# Each binary is static (CGO_ENABLED=0) and reproducible: built with
# -trimpath, without the build's own VCS stamp (-buildvcs=false), and with
# the version, the commit and the commit's time set by -ldflags
# (internal/version), so the same commit built with the same Go version
# gives the same bytes wherever it is built, whatever the folder or the
# build cache. `bifrost-migrate version` prints what was stamped.
#
# VERSION is the first argument; without it, the tag on HEAD when there is
# one (git describe --exact-match), else a Go pseudo-version of HEAD
# (v0.0.0-YYYYMMDDhhmmss-<12 hex of the commit>). A tree with changes that
# are not committed is refused: its binaries could not be rebuilt from the
# commit they name. --allow-dirty builds them anyway, marked "modified"
# (and VERSION gets +dirty).
#
# --platform OS/ARCH (repeatable) builds only those (scripts/image.sh
# builds linux/amd64 or linux/arm64 this way).
#
# Needs Go and git; the network only for the Go module proxy (the modules
# in go.sum, when they are not in the module cache yet).
#
# Usage: scripts/release.sh [--allow-dirty] [--out DIR] [--platform OS/ARCH]... [VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist
allow_dirty=
version=
all="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
platforms=
while [ $# -gt 0 ]; do
	case "$1" in
	--allow-dirty) allow_dirty=1 ;;
	--out)
		[ $# -ge 2 ] || { echo "release.sh: --out needs a directory" >&2; exit 2; }
		out=$2
		shift
		;;
	--platform)
		[ $# -ge 2 ] || { echo "release.sh: --platform needs OS/ARCH" >&2; exit 2; }
		case " $all " in
		*" $2 "*) platforms="$platforms $2" ;;
		*) echo "release.sh: --platform $2 is not one of $all" >&2; exit 2 ;;
		esac
		shift
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*) echo "release.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*)
		[ -z "$version" ] || { echo "release.sh: one VERSION only" >&2; exit 2; }
		version=$1
		;;
	esac
	shift
done

revision=$(git rev-parse HEAD)
# The commit's time, in UTC, as Go stamps vcs.time.
revision_time=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
modified=false
if [ -n "$(git status --porcelain)" ]; then
	if [ -z "$allow_dirty" ]; then
		echo "release.sh: the tree has changes that are not committed (git status); commit them, or pass --allow-dirty to build binaries marked modified" >&2
		exit 1
	fi
	modified=true
fi
if [ -z "$version" ]; then
	if ! version=$(git describe --tags --exact-match HEAD 2>/dev/null); then
		stamp=$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)
		version="v0.0.0-$stamp-${revision:0:12}"
	fi
	if [ "$modified" = true ]; then
		version="$version+dirty"
	fi
fi
case "$version" in
*[!A-Za-z0-9.+_-]*) echo "release.sh: VERSION $version may hold only letters, digits and . + _ -" >&2; exit 2 ;;
esac

pkg=github.com/bifrost/bifrost-migrate/internal/version
ldflags="-s -w -X $pkg.version=$version -X $pkg.revision=$revision -X $pkg.revisionTime=$revision_time -X $pkg.modified=$modified"

sha256() {
	if command -v sha256sum >/dev/null; then
		sha256sum "$@"
	else
		shasum -a 256 "$@"
	fi
}

mkdir -p "$out"
rm -f "$out"/bifrost-migrate_* "$out"/SHA256SUMS
echo "release $version ($revision, $revision_time, modified $modified) with $(go version | cut -d' ' -f3)" >&2
names=()
for target in ${platforms:-$all}; do
	goos=${target%/*} goarch=${target#*/}
	name="bifrost-migrate_${version}_${goos}_${goarch}"
	[ "$goos" = windows ] && name="$name.exe"
	# Everything that changes the bytes is set here, not taken from the
	# environment (GOAMD64, GOARM64: the baseline of each architecture).
	env CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" GOAMD64=v1 GOARM64=v8.0 GOEXPERIMENT= \
		go build -trimpath -buildvcs=false -ldflags="$ldflags" -o "$out/$name" .
	names+=("$name")
	echo "  $name" >&2
done
(cd "$out" && sha256 "${names[@]}" >SHA256SUMS)
echo "$out/SHA256SUMS:" >&2
cat "$out/SHA256SUMS"
