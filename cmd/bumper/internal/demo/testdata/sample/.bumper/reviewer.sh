#!/bin/sh
# The demo's scripted reviewer, run by the command harness in a fresh VM: it reads the
# pull request's diff and writes a verdict (verdict-v1). A stand-in for a model.
set -eu
diff=${BUMPER_REVIEW_DIFF:-/task/pr.diff}
out=${BUMPER_VERDICT:-/out/verdict.json}
if grep -q '^+	for _, n := range boxes {' "$diff" && grep -q '^+		total += n$' "$diff"; then
	cat >"$out" <<'JSON'
{"schema_version": 1, "verdict": "approve", "confidence": 0.95,
 "summary": "`Total` now ranges over the boxes, so it counts every box with no index to get wrong; the existing table test covers it and passes.",
 "findings": []}
JSON
elif grep -q '^+	for i := 0; i < len(boxes); i++ {' "$diff"; then
	cat >"$out" <<'JSON'
{"schema_version": 1, "verdict": "approve", "confidence": 0.9,
 "summary": "The loop now starts at the first box, so `Total` counts every box; the existing table test covers it and passes.",
 "findings": [{"file": "widgets.go", "line": 7, "side": "RIGHT", "severity": "nit", "message": "`for _, n := range boxes` would say the same with no index to get wrong."}]}
JSON
else
	cat >"$out" <<'JSON'
{"schema_version": 1, "verdict": "request_changes", "confidence": 0.6,
 "summary": "The diff does not change where `Total`'s loop starts, which is what the issue is about.",
 "findings": [{"file": "widgets.go", "severity": "major", "message": "Start the loop at the first box."}]}
JSON
fi
echo "reviewer: verdict written"
