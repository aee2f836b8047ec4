#!/bin/sh
# The demo's scripted agent, run by the command harness inside the VM in the checkout:
# it makes the change the issue asks for, as a coding agent would, and records the one
# judgement call it made. It is a stand-in for a model, not one.
set -eu
echo "agent: reading the task"
sed -n '1,5p' "$BUMPER_TASK"
sed -i 's/for i := 1; i < len(boxes); i++ {/for i := 0; i < len(boxes); i++ {/' widgets.go
gofmt -l . | grep . && { echo "agent: gofmt disagrees" >&2; exit 1; }
git commit -q -am "Count the first box in Total"
cat >"$BUMPER_DECISIONS" <<'JSON'
{"schema_version": 1, "decisions": [
 {"question": "Fix the loop's start or rewrite it as a range loop?", "choice": "Start the loop at 0.", "rationale": "The smallest change that fixes the bug; a rewrite is a matter of style the issue does not ask for.", "confidence": 0.9}
]}
JSON
echo "agent: Total now starts at the first box"
