#!/usr/bin/env bash
# The whole arc on one machine, until `bumper demo` exists: a GitHub emulator with its
# git server and local runner, `bumper serve`, and for the approved run the real
# `bumper run` with its firewall and a QEMU microVM. A maintainer labels an issue, a
# reader's /approve is refused, the maintainer's dispatches the run; a scripted agent
# (the end-to-end tests' e2e/testdata/agent.sh, with the command harness) makes a change
# that fails the repository's test, fixes it in the second verification round, and the
# run ends in a pull request with evidence. Needs root (network namespaces, nftables)
# and QEMU; the first run builds the VM image (about a minute), later runs reuse it.
#
#   sudo scripts/demo.sh                 # uses 127.0.0.1:18080 and :18081
#   EMU_PORT=28080 SERVE_PORT=28081 sudo scripts/demo.sh
#   KEEP=1 sudo scripts/demo.sh          # keep the run's files (printed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo: run as root: bumper run makes a network namespace and nftables rules per run" >&2; exit 1; }
EMU_PORT=${EMU_PORT:-18080}
SERVE_PORT=${SERVE_PORT:-18081}
CACHE=${CACHE:-/var/cache/bumper}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

echo "== building bumper"
CGO_ENABLED=0 go build -trimpath -o "$work/bumper" ./cmd/bumper
EMU=http://127.0.0.1:$EMU_PORT
SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# The sample repository: widgets.sh prints 3, test.sh wants 4, and .github/bumper.yml
# runs the scripted agent with the command harness and test.sh as verification.
python3 - "$work/seed.yml" <<'PY'
import json, sys
agent = open("e2e/testdata/agent.sh").read()
workflow = """name: bumper-run
on:
  workflow_dispatch:
    inputs:
      work_item: {required: true}
      attempt: {required: true}
      nonce: {required: true}
      stage: {required: true}
permissions:
  id-token: write
jobs:
  run:
    runs-on: [self-hosted, bumper]
    steps:
      - uses: bumperdev/bumper@v0
"""
files = {
    "README.md": "# widgets\n",
    "widgets.sh": "#!/bin/sh\n# Prints the widget count.\necho 3\n",
    "test.sh": "#!/bin/sh\ngot=$(sh widgets.sh)\nif [ \"$got\" != 4 ]; then echo \"FAIL: widgets.sh printed $got, want 4\"; exit 1; fi\necho 'PASS: 4 widgets'\n",
    ".bumper/agent.sh": agent,
    ".github/bumper.yml": "version: 1\nharness:\n  name: command\n  command: sh .bumper/agent.sh\nverification:\n  - sh test.sh\nbounds:\n  verification_rounds: 2\n",
    ".github/workflows/bumper-run.yml": workflow,
}
seed = {
    "app": {"id": 4242, "slug": "bumper", "name": "Bumper", "owner": "acme"},
    "users": [{"login": "maintainer", "name": "Mae Maintainer", "email": "maintainer@example.test"},
              {"login": "reader", "name": "Rey Reader", "email": "reader@example.test"}],
    "organizations": ["acme"],
    "repositories": [{"owner": "acme", "name": "widgets", "private": True, "default_branch": "main",
                      "collaborators": {"maintainer": "write", "reader": "read"},
                      "labels": [{"name": "agent:implement", "color": "5319e7"}], "files": files}],
    "installations": [{"account": "acme"}],
}
open(sys.argv[1], "w").write(json.dumps(seed, indent=1))  # JSON is YAML
PY

echo "== starting the GitHub emulator on $EMU, its local runner running bumper run"
"$work/bumper" emulator --listen "127.0.0.1:$EMU_PORT" --state "$work/emu" --seed "$work/seed.yml" \
	--webhook-url "http://127.0.0.1:$SERVE_PORT/api/github/hook" --webhook-secret "$SECRET" \
	--runner "INPUT_OUT=$work/out/\$GITHUB_RUN_ID exec $work/bumper run" --runner-timeout 15m \
	--runner-env "INPUT_URL=http://127.0.0.1:$SERVE_PORT" --runner-env "INPUT_CACHE=$CACHE" \
	--runner-env "INPUT_ALLOW_TCG=true" --runner-env "INPUT_MEMORY=1G" \
	>"$work/emu.out" 2>"$work/emu.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "user reader" "$work/emu.out" 2>/dev/null && break; sleep 0.1; done
grep -q "user reader" "$work/emu.out" || { cat "$work/emu.log"; exit 1; }
MAINT=$(awk '/user maintainer/ {print $4}' "$work/emu.out")
READER=$(awk '/user reader/ {print $4}' "$work/emu.out")

cat >"$work/serve.yml" <<YAML
github:
  v3_api_url: $EMU/
  app:
    integration_id: 4242
    webhook_secret: $SECRET
server:
  address: 127.0.0.1:$SERVE_PORT
bumper:
  private_key_file: $work/emu/app-private-key.pem
  oidc_issuer: $EMU
YAML
echo "== starting bumper serve on 127.0.0.1:$SERVE_PORT"
BUMPER_RUN_TOKEN_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	"$work/bumper" serve --config "$work/serve.yml" >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$SERVE_PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$SERVE_PORT/healthz" >/dev/null || { cat "$work/serve.log"; exit 1; }

api() { # api TOKEN METHOD PATH [BODY]
	curl -fsS -X "$2" -H "Authorization: token $1" -H "Content-Type: application/json" \
		${4:+-d "$4"} "$EMU$3"
}
labels() { api "$MAINT" GET /repos/acme/widgets/issues/1/labels | grep -o '"name":"bumper:[^"]*"' | cut -d'"' -f4 | paste -sd, -; }
wait_label() { # wait_label LABEL SECONDS
	for _ in $(seq $(($2 * 10))); do [ "$(labels)" = "$1" ] && return 0; sleep 0.1; done
	echo "   (still $(labels) after $2 s)"; return 1
}

echo "== the maintainer opens an issue and labels it agent:implement"
api "$MAINT" POST /repos/acme/widgets/issues '{"title":"Count to 4","body":"test.sh wants 4 widgets, but widgets.sh prints 3.\n\nscenario: fix"}' >/dev/null
api "$MAINT" POST /repos/acme/widgets/issues/1/labels '{"labels":["agent:implement"]}' >/dev/null
wait_label bumper:awaiting-approval 10 && echo "   state: $(labels)"
echo "== the reader comments /approve (read permission: refused)"
api "$READER" POST /repos/acme/widgets/issues/1/comments '{"body":"/approve"}' >/dev/null
sleep 1; echo "   state: $(labels)"
echo "== the maintainer comments /approve: one run dispatched; bumper run takes it"
api "$MAINT" POST /repos/acme/widgets/issues/1/comments '{"body":"/approve"}' >/dev/null
start=$(date +%s)
if ! wait_label bumper:reviewing 900; then
	echo "== the run did not reach a pull request; its job log:"
	cat "$work"/emu/runner/*/job.log 2>/dev/null | grep -v '^{' | tail -40
	exit 1
fi
echo "   state: $(labels) after $(($(date +%s) - start)) s (the first run on this machine builds the image first)"
echo "== the pull request"
api "$MAINT" GET /repos/acme/widgets/pulls | python3 -c 'import json,sys
for p in json.load(sys.stdin):
    print("   #%d %s (by %s, from %s, head %s)" % (p["number"], p["title"], p["user"]["login"], p["head"]["ref"], p["head"]["sha"][:12]))'
out=$(ls -d "$work"/out/* | head -1)
echo "== the run's evidence ($out/evidence.md), first lines:"
head -n 16 "$out/evidence.md" | sed 's/^/   /'
echo "== done: the run's files are $(ls "$out" | paste -sd' ' -)${KEEP:+ in $out}"
