#!/usr/bin/env bash
# Builds the bifrost-migrate container image from Containerfile with the
# engine that is present (docker with a running engine, else podman, else
# buildah; --engine chooses), then checks it: its entry point, user, working
# directory and volume, and `--version` and `--help` run in it.
#
# Nothing is pulled: the image is FROM scratch, and its build context is
# made here from the static linux binary scripts/release.sh builds for this
# machine's architecture (or --binary FILE), the CA certificates of this
# machine (/etc/ssl/certs/ca-certificates.crt or the first of the usual
# places; CA_BUNDLE=FILE chooses) and an empty state/ folder.
#
# The image is tagged bifrost-migrate:VERSION and bifrost-migrate:latest
# (--tag NAME:TAG replaces both). Running it:
#   podman run --rm -v bifrost-state:/state -e BIFROST_COSMOS_ENDPOINT=… bifrost-migrate:latest run
# Where the engine needs options to run a container (this project's test
# machine: see docs/install.md), RUN_OPTS="…" adds them to `docker/podman run`;
# buildah runs the checks with --isolation chroot (BUILDAH_ISOLATION).
#
# Usage: scripts/image.sh [--engine docker|podman|buildah] [--tag NAME:TAG] [--binary FILE] [--allow-dirty]
set -euo pipefail
cd "$(dirname "$0")/.."

engine= tag= binary= allow_dirty=
while [ $# -gt 0 ]; do
	case "$1" in
	--engine | --tag | --binary)
		[ $# -ge 2 ] || { echo "image.sh: $1 needs a value" >&2; exit 2; }
		case "$1" in
		--engine) engine=$2 ;;
		--tag) tag=$2 ;;
		--binary) binary=$2 ;;
		esac
		shift
		;;
	--allow-dirty) allow_dirty=--allow-dirty ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

if [ -z "$engine" ]; then
	if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
		engine=docker
	elif command -v podman >/dev/null; then
		engine=podman
	elif command -v buildah >/dev/null; then
		engine=buildah
	else
		echo "image.sh: no container engine: install docker, podman or buildah (Debian: apt-get install podman buildah)" >&2
		exit 1
	fi
fi
case "$engine" in
docker | podman | buildah) command -v "$engine" >/dev/null || { echo "image.sh: $engine is not installed" >&2; exit 1; } ;;
*) echo "image.sh: --engine must be docker, podman or buildah" >&2; exit 2 ;;
esac

ctx=$(mktemp -d "${TMPDIR:-/tmp}/bifrost-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT

if [ -z "$binary" ]; then
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "image.sh: no release build for $(uname -m); give --binary" >&2; exit 1 ;;
	esac
	scripts/release.sh $allow_dirty --out "$ctx/dist" --platform "linux/$arch" >/dev/null
	binary=$(ls "$ctx"/dist/bifrost-migrate_*_linux_"$arch")
fi
cp "$binary" "$ctx/bifrost-migrate"
chmod 0755 "$ctx/bifrost-migrate"

bundle=${CA_BUNDLE:-}
if [ -z "$bundle" ]; then
	for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
		if [ -s "$f" ]; then bundle=$f; break; fi
	done
fi
[ -n "$bundle" ] && [ -s "$bundle" ] || { echo "image.sh: no CA certificate bundle found: set CA_BUNDLE=FILE" >&2; exit 1; }
cp "$bundle" "$ctx/ca-certificates.crt"
mkdir "$ctx/state"
cp Containerfile "$ctx/Containerfile"

# The version and revision the binary was stamped with.
info=$("$ctx/bifrost-migrate" version 2>/dev/null || true)
version=$(printf '%s\n' "$info" | sed -n '1s/^bifrost-migrate //p')
revision=$(printf '%s\n' "$info" | sed -n 's/^revision: \([0-9a-f]*\).*/\1/p')
if [ -z "$version" ]; then
	# A binary for another architecture than this machine's: name it
	# by its file.
	version=$(basename "$binary" | sed -n 's/^bifrost-migrate_\(.*\)_linux_[a-z0-9]*$/\1/p')
fi
version=${version:-unknown}
# A tag may not hold '+' (a dirty build's version).
tagversion=$(printf '%s' "$version" | tr '+' '-')
tags=("bifrost-migrate:$tagversion" "bifrost-migrate:latest")
[ -n "$tag" ] && tags=("$tag")

echo "image.sh: building ${tags[0]} ($version, revision ${revision:-unknown}) with $engine ($("$engine" --version | head -1))" >&2
tagargs=()
for t in "${tags[@]}"; do tagargs+=(--tag "$t"); done
buildargs=(--build-arg "VERSION=$version" --build-arg "REVISION=${revision:-unknown}" -f "$ctx/Containerfile" "${tagargs[@]}")
# The build's own output goes to stderr: stdout is what ran in the image.
case "$engine" in
docker) docker build "${buildargs[@]}" "$ctx" >&2 ;;
podman) podman build --pull=never "${buildargs[@]}" "$ctx" >&2 ;;
buildah) buildah build --pull=never "${buildargs[@]}" "$ctx" >&2 ;;
esac

# The image's configuration, as Containerfile sets it.
if [ "$engine" = buildah ]; then
	config=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.User}} {{.OCIv1.Config.WorkingDir}} {{.OCIv1.Config.Volumes}}' "${tags[0]}")
else
	config=$("$engine" image inspect --format '{{.Config.Entrypoint}} {{.Config.User}} {{.Config.WorkingDir}} {{.Config.Volumes}}' "${tags[0]}")
fi
want='[bifrost-migrate] 65532:65532 /state map[/state:{}]'
if [ "$config" != "$want" ]; then
	echo "image.sh: the image's entry point, user, working directory and volumes are $config, want $want" >&2
	exit 1
fi

# --version and --help, run in the image.
run_in_image() {
	case "$engine" in
	docker | podman)
		# shellcheck disable=SC2086 # RUN_OPTS is a list of options
		"$engine" run --rm ${RUN_OPTS:-} "${tags[0]}" "$@"
		;;
	buildah)
		local ctr status=0
		ctr=$(buildah from --pull-never "${tags[0]}")
		# buildah run ignores the entry point: name the binary on PATH.
		buildah run --isolation "${BUILDAH_ISOLATION:-chroot}" "$ctr" -- bifrost-migrate "$@" || status=$?
		buildah rm "$ctr" >/dev/null
		return $status
		;;
	esac
}
if ! got=$(run_in_image --version); then
	echo "image.sh: ${tags[0]} is built, but $engine could not run it (the error is above); where the machine restricts limits or cgroups, RUN_OPTS=\"…\" gives $engine run options (docs/install.md says which worked on the project's test machine), or try --engine buildah" >&2
	exit 1
fi
if [ "$(printf '%s\n' "$got" | head -1)" != "bifrost-migrate $version" ]; then
	echo "image.sh: --version in the image printed:" >&2
	printf '%s\n' "$got" >&2
	exit 1
fi
printf '%s\n' "$got"
run_in_image --help | head -3
echo "image.sh: ${tags[*]} built with $engine; --version and --help ran in it" >&2
