#!/usr/bin/env bash
# soak.sh — Bumper's week on this machine (e2e TestWeek, BUMPER_WEEK=full): the admin's
# setup against the GitHub emulator, then forty work items over three repositories,
# with GitHub's faults, two serve replicas behind a round-robin balancer (one killed and
# restarted twice), a runner host running several real microVM runs at once (a runner
# killed mid-run twice), and a host-wide VM limit. It prints the week's figures as the
# table docs/week.md keeps, and exits non-zero if a promise broke (an item neither
# final nor waiting with a reason, a duplicate, a lost approval, a request before its
# Retry-After, anything left on the host).
#
#   sudo bench/soak.sh                    # the full week (about 20 minutes on 2 cores)
#   sudo bench/soak.sh --short            # the week CI runs (twelve items)
#   sudo bench/soak.sh --seed 42          # other faults, replayable by their seed
#
# As root, with QEMU and nftables (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
week=full seed=
while [ $# -gt 0 ]; do
	case "$1" in
	--short) week=short ;;
	--seed) seed=${2:?--seed needs a number}; shift ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "soak.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if [ "$(id -u)" != 0 ]; then
	echo "soak.sh: run it as root: the runs need network namespaces, nftables and QEMU" >&2
	exit 2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PATH=/usr/local/go/bin:$PATH
status=0
keep=/var/tmp/bumper-week-$(date +%Y%m%d-%H%M%S)
BUMPER_WEEK=$week BUMPER_WEEK_SEED=$seed BUMPER_WEEK_OUT="$out/table.md" BUMPER_WEEK_KEEP=$keep \
	go test ./e2e -run '^TestWeek$' -count=1 -timeout 3h -v >"$out/week.log" 2>&1 || status=$?
grep -E '^\s+week(items|rounds|host|figures)?_test\.go:[0-9]+: ' "$out/week.log" | grep -v '^\s*week_test.go:[0-9]*: *$' || true
if [ -s "$out/table.md" ]; then
	echo
	cat "$out/table.md"
fi
if [ "$status" != 0 ]; then
	echo
	echo "soak.sh: the week broke a promise or did not finish (go test exit $status); serve's logs and the runs' are in $keep; its log:" >&2
	tail -n 60 "$out/week.log" >&2
fi
exit "$status"
