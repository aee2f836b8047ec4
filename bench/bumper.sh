#!/usr/bin/env bash
# bumper.sh - run the proxy benchmark with Bumper's firewall beside squid and tinyproxy.
#
# Builds `bumper` from this repository (outside the benchmark's namespace, with the
# normal Go cache), then runs ./run.sh with an extra target `bumper` started by run.sh
# itself (--cmd), so all three proxies face the same load, allowlist and upstream in one
# run. Every other argument goes to run.sh unchanged, e.g.:
#
#   sudo ./bumper.sh --quick              # smoke test
#   sudo ./bumper.sh                      # full run (3 rounds), ~6 min on an idle box
#   sudo ./bumper.sh --only bumper,squid
#
# The firewall gets the same policy as squid (allowed.test and *.allowed.test, ports
# 8080 and 8443), and --resolve pins the two allowed names to the upstream on 127.0.0.2:
# without it Bumper would refuse them, since 127.0.0.0/8 is never dialled otherwise.
set -euo pipefail
BASE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BASE/.." && pwd)
ADDR=${BUMPER_ADDR:-127.0.0.1:3130}

mkdir -p "$BASE/bin" "$BASE/run"
(cd "$REPO" && go build -o "$BASE/bin/bumper" ./cmd/bumper)
rm -f "$BASE/run/bumper-audit.jsonl"

CMD="$BASE/bin/bumper firewall --listen $ADDR --audit $BASE/run/bumper-audit.jsonl"
CMD+=" --allow allowed.test:8080,8443 --allow '*.allowed.test:8080,8443'"
CMD+=" --resolve allowed.test:127.0.0.2 --resolve www.allowed.test:127.0.0.2"

rc=0
"$BASE/run.sh" "bumper=$ADDR" --cmd bumper "$CMD" "$@" || rc=$?
if [[ -s $BASE/run/bumper-audit.jsonl ]]; then
	echo "bumper audit log: $("$BASE/bin/bumper" audit verify "$BASE/run/bumper-audit.jsonl")"
fi
exit $rc
