#!/usr/bin/env bash
# get-bumper.sh DEST_DIR: puts the bumper binary the action runs at DEST_DIR/bumper.
#
# action.yml's first step. It uses the release asset of the action's own version when
# there is one (GoReleaser's naming: bumper_<version>_linux_<arch>.tar.gz beside
# bumper_<version>_checksums.txt or checksums.txt, on the GitHub release of the action's
# repository), verified against the checksums file, and otherwise builds the binary from
# the action's own checkout with the Go toolchain on the runner. It says which it did;
# it fails when neither works, and refuses an asset whose checksum does not match.
# (The functions below run as `if` conditions, where bash ignores set -e: each step that
# can fail is checked.)
#
# Environment:
#   BUMPER_VERSION      the release tag to use (the action's `version` input, by default
#                       its own ref); empty, or not a tag like v1.2.3: build from source
#   BUMPER_ACTION_PATH  the action's checkout (default: the repository this script is in)
#   BUMPER_REPOSITORY   owner/name whose releases to use (default: read from the runner's
#                       layout of BUMPER_ACTION_PATH, .../_actions/OWNER/NAME/REF)
#   GITHUB_SERVER_URL   where that repository is (default https://github.com)
#   GITHUB_OUTPUT       when set, gets path=DEST_DIR/bumper and source=release|source
#
# No token is sent: the job's GITHUB_TOKEN belongs to the repository the workflow runs
# in, not the action's, and a public release's assets need none.
set -euo pipefail

dest=${1:?usage: get-bumper.sh DEST_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=${BUMPER_ACTION_PATH:-$here}
version=${BUMPER_VERSION:-}
server=${GITHUB_SERVER_URL:-https://github.com}
server=${server%/}
repo=${BUMPER_REPOSITORY:-}
bin="$dest/bumper"

say() { echo "get-bumper: $*"; }
fail() {
	echo "::error title=bumper binary::$*"
	exit 1
}
output() {
	if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1=$2" >>"$GITHUB_OUTPUT"; fi
}

if [ -z "$repo" ]; then
	# GitHub's runner checks an action OWNER/NAME@REF out into _actions/OWNER/NAME/REF.
	name_dir=$(dirname "$src")
	owner_dir=$(dirname "$name_dir")
	if [ -n "$version" ] && [ "$(basename "$src")" = "$version" ] && [ "$(basename "$(dirname "$owner_dir")")" = "_actions" ]; then
		repo="$(basename "$owner_dir")/$(basename "$name_dir")"
	fi
fi

case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) arch=$(uname -m) ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dest"

# fetch URL FILE: prints the HTTP status (000 when no answer came; why is in curl.err).
fetch() {
	local proto=https code
	case "$1" in http://*) proto=http ;; esac
	code=$(curl --silent --show-error --location --proto "=$proto" --proto-redir "=$proto" \
		--connect-timeout 20 --max-time 600 --retry 3 \
		--output "$2" --write-out '%{http_code}' "$1" 2>"$tmp/curl.err") || true
	case "$code" in [1-5][0-9][0-9]) echo "$code" ;; *) echo 000 ;; esac
}

# from_release installs the release asset; it returns 1, with why in $reason, when there
# is none to use, and exits when the asset does not match its checksum.
reason=""
from_release() {
	case "$version" in
	v[0-9]*.*) ;;
	"")
		reason="no version given"
		return 1
		;;
	*)
		reason="version '$version' names no release (releases are tagged like v1.2.3; a major tag such as v0 moves)"
		return 1
		;;
	esac
	if [ -z "$repo" ]; then
		reason="the action's repository is not known (set BUMPER_REPOSITORY)"
		return 1
	fi
	if ! command -v curl >/dev/null; then
		reason="curl is not installed"
		return 1
	fi
	local ver=${version#v}
	local asset="bumper_${ver}_linux_${arch}.tar.gz"
	local base="$server/$repo/releases/download/$version"
	local code
	code=$(fetch "$base/$asset" "$tmp/$asset")
	case "$code" in
	200) ;;
	404)
		reason="the release $version of $repo has no asset $asset"
		return 1
		;;
	000)
		reason="downloading $base/$asset failed: $(head -c 300 "$tmp/curl.err")"
		return 1
		;;
	*)
		reason="downloading $base/$asset answered HTTP $code"
		return 1
		;;
	esac
	local sums=""
	for name in "bumper_${ver}_checksums.txt" checksums.txt; do
		if [ "$(fetch "$base/$name" "$tmp/$name")" = 200 ]; then
			sums=$name
			break
		fi
	done
	if [ -z "$sums" ]; then
		reason="the release $version of $repo has no bumper_${ver}_checksums.txt or checksums.txt, and an unverified binary is not used"
		return 1
	fi
	local want got
	want=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/$sums")
	if [ -z "$want" ]; then
		fail "refusing $asset: $sums of release $version does not list it"
	fi
	got=$(sha256sum "$tmp/$asset" | cut -d' ' -f1)
	if [ "$got" != "$want" ]; then
		fail "refusing $asset: its SHA-256 is $got, $sums of release $version says $want; the download was corrupted or tampered with"
	fi
	mkdir "$tmp/x" || fail "cannot unpack $asset in $tmp"
	if ! tar -xzf "$tmp/$asset" -C "$tmp/x" bumper 2>"$tmp/tar.err" || [ ! -f "$tmp/x/bumper" ]; then
		fail "refusing $asset: it holds no file 'bumper' ($(head -c 300 "$tmp/tar.err"))"
	fi
	install -m 0755 "$tmp/x/bumper" "$bin" || fail "cannot install $bin"
	say "using the release asset $asset of $repo $version (SHA-256 $got, checked against $sums)"
}

from_source() {
	if ! command -v go >/dev/null; then
		reason="$reason; and Go is not installed on the runner to build it from source"
		return 1
	fi
	if [ ! -f "$src/go.mod" ] || [ ! -d "$src/cmd/bumper" ]; then
		reason="$reason; and $src is not bumper's source to build from"
		return 1
	fi
	say "building bumper from source in $src with $(go version)"
	# Static: the same binary is the guest agent inside the VM images.
	if ! (cd "$src" && CGO_ENABLED=0 go build -trimpath \
		-ldflags "-X github.com/bumperdev/bumper/internal/buildinfo.Version=${version:-dev}" \
		-o "$bin" ./cmd/bumper); then
		reason="$reason; and building it from source failed (see above)"
		return 1
	fi
	say "built from source"
}

if from_release; then
	output source release
else
	say "no release binary: $reason"
	if ! from_source; then
		fail "cannot get bumper: $reason. Use a version that has a release (uses: OWNER/bumper@vX.Y.Z, or the version input), or install Go on the runner (docs/runner-host.md, \"The bumper binary\")"
	fi
	output source source
fi
if ! version_line=$("$bin" version 2>&1); then
	fail "$bin does not run: $version_line"
fi
say "$version_line"
output path "$bin"
