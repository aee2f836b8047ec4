#!/usr/bin/env bash
# Prints the cost of an image with each agent CLI (issue #13's benchmark): the image
# build with the harness the first time (the CLI's tarball downloaded from the npm
# registry and checked, then assembled) and again (found by its key), the rootfs's
# size against the image without a harness, and the time from a VM's start to the
# CLI's first line of output (`--version`, as the agent's first step) under the
# accelerator given (tcg by default, as CI). Debootstrap and the kernel are cached
# first, so the figures are the harness's own. Needs root and QEMU.
#
#   sudo scripts/bench-harness.sh            # CACHE=/var/tmp/bumper-bench-harness
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-harness: run as root (debootstrap, QEMU)" >&2; exit 1; }
CACHE=${CACHE:-/var/tmp/bumper-bench-harness}
ACCEL=${ACCEL:-tcg}
bin=$(mktemp -d)/bumper
trap 'rm -rf "$(dirname "$bin")"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$bin" ./cmd/bumper

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
mib() { du -B1M --apparent-size "$1" | cut -f1; }
used() { du -B1M "$1" | cut -f1; }

# The base image: debootstrap and the kernel, once.
base=$("$bin" image build --cache "$CACHE" 2>/dev/null)
printf '%-12s %10s %10s %12s %12s %16s\n' image first_s again_s rootfs_MiB allocated_MiB vm_to_output_s
printf '%-12s %10s %10s %12s %12s %16s\n' none - - "$(mib "$base/rootfs.ext4")" "$(used "$base/rootfs.ext4")" -
for h in claude-code@2.1.328 codex@0.171.0; do
	name=${h%@*}
	# First build: no tarball, no image of this harness in the cache.
	rm -rf "$CACHE/harness"
	for d in "$CACHE"/images/*/; do
		grep -q "\"name\": *\"$name\"" "$d/manifest.json" 2>/dev/null && rm -rf "$d"
	done
	t0=$(now)
	img=$("$bin" image build --cache "$CACHE" --harness "$h" 2>/dev/null)
	t1=$(now)
	"$bin" image build --cache "$CACHE" --harness "$h" >/dev/null 2>&1
	t2=$(now)
	cmd=claude
	[ "$name" = codex ] && cmd=codex
	t3=$(now)
	"$bin" sandbox run --image "$img" --cache "$CACHE" --accel "$ACCEL" --cold -- "$cmd" --version >/dev/null 2>&1
	t4=$(now)
	printf '%-12s %10s %10s %12s %12s %16s\n' "$name" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" \
		"$(mib "$img/rootfs.ext4")" "$(used "$img/rootfs.ext4")" "$(secs "$t3" "$t4")"
done
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; load $(cut -d' ' -f1-3 /proc/loadavg); accel $ACCEL"
