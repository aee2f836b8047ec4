#!/usr/bin/env bash
# The control plane on one machine: a GitHub emulator and `bumper serve` on loopback.
# A maintainer labels an issue agent:implement, a reader's /approve is refused, the
# maintainer's /approve dispatches exactly one run of the runner workflow. It prints
# what GitHub shows at each step and stops both servers at the end.
#
#   scripts/control-plane-demo.sh            # uses 127.0.0.1:18080 and :18081
#   EMU_PORT=28080 SERVE_PORT=28081 scripts/control-plane-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
EMU_PORT=${EMU_PORT:-18080}
SERVE_PORT=${SERVE_PORT:-18081}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building bumper"
go build -o "$work/bumper" ./cmd/bumper
EMU=http://127.0.0.1:$EMU_PORT
SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

echo "== starting the GitHub emulator on $EMU"
"$work/bumper" emulator --listen "127.0.0.1:$EMU_PORT" --state "$work/emu" \
	--webhook-url "http://127.0.0.1:$SERVE_PORT/api/github/hook" --webhook-secret "$SECRET" \
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
settle() { sleep "${1:-1.5}"; }
show() {
	echo "   labels:  $(api "$MAINT" GET /repos/acme/widgets/issues/1/labels | grep -o '"name":"[^"]*"' | cut -d'"' -f4 | paste -sd, -)"
	echo "   comments:"
	api "$MAINT" GET /repos/acme/widgets/issues/1/comments |
		python3 -c 'import json,sys
for c in json.load(sys.stdin):
    lines = [l for l in c["body"].split("\n") if l.strip() and not l.startswith("<!--")]
    first = (lines or [""])[0][:110]
    print("     - %s: %s" % (c["user"]["login"], first))'
	echo "   runs:    $(api "$MAINT" GET /repos/acme/widgets/actions/runs | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_count"])')"
}

echo "== the maintainer opens an issue and labels it agent:implement"
api "$MAINT" POST /repos/acme/widgets/issues '{"title":"Count widgets twice","body":"widgets.sh should print 6."}' >/dev/null
api "$MAINT" POST /repos/acme/widgets/issues/1/labels '{"labels":["agent:implement"]}' >/dev/null
settle; show
echo "== the reader comments /approve (read permission: refused)"
api "$READER" POST /repos/acme/widgets/issues/1/comments '{"body":"/approve"}' >/dev/null
settle; show
echo "== the maintainer comments /approve (write permission: one dispatch)"
api "$MAINT" POST /repos/acme/widgets/issues/1/comments '{"body":"/approve"}' >/dev/null
settle; show
echo "== the dispatched run, as a runner sees it"
api "$MAINT" GET /_emulator/repos/acme/widgets/actions/runs | python3 -c 'import json,sys
for r in json.load(sys.stdin):
    print("   run %d %s %s inputs=%s" % (r["id"], r["workflow_path"], r["status"], json.dumps(r["inputs"], sort_keys=True)))'
echo "== done (the runner side, firewall and sandbox, are run separately: see docs/runner.md and docs/firewall.md)"
