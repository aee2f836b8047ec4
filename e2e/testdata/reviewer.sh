#!/bin/sh
# The scripted reviewer of Bumper's end-to-end tests, run by the command harness in a
# review run's VM from the base commit's tree. It does what the "review:" line of the
# task says: approve, changes (request changes with one finding on a line the diff
# changes and one elsewhere), malformed (a verdict that is not one) or none (no verdict
# at all). It is test infrastructure, not a model.
set -eu
review=$(sed -n 's/^│ review: *//p' "$BUMPER_TASK" | head -n 1)
echo "reviewer: review ${review:-none}, running from $(pwd)"
echo "reviewer: the diff has $(wc -l <"$BUMPER_REVIEW_DIFF") lines; the evidence $(wc -c <"$BUMPER_REVIEW_EVIDENCE") bytes"
echo "reviewer: verification said: $(printf '%s' "$BUMPER_VERIFICATION" | head -n 1)"
# The head's test, run again in the head's checkout.
(cd "$BUMPER_REVIEW_REPO" && sh test.sh) 2>&1 | sed 's/^/reviewer: test.sh: /' || true
# A reviewer may push nothing, not even the branch it reviews.
git -C "$BUMPER_REVIEW_REPO" push "$BUMPER_GIT_URL" "HEAD:refs/heads/$BUMPER_BRANCH" 2>&1 | sed 's/^/reviewer: push: /' || true

case "$review" in
approve)
	cat >"$BUMPER_VERDICT" <<'JSON'
{"schema_version": 1, "verdict": "approve", "confidence": 0.9, "summary": "widgets.sh prints 4, as test.sh wants.", "findings": []}
JSON
	;;
changes)
	cat >"$BUMPER_VERDICT" <<'JSON'
{"schema_version": 1, "verdict": "request_changes", "confidence": 0.85,
 "summary": "The count is right, but hard-coded.",
 "findings": [
  {"file": "widgets.sh", "line": 3, "side": "RIGHT", "severity": "major", "message": "The count is a constant: compute it."},
  {"file": ".github/bumper.yml", "line": 2, "severity": "minor", "message": "The harness is a script of the repository."}
 ]}
JSON
	;;
malformed)
	printf '{"schema_version": 1, "verdict": "lgtm", "confidence": 1, "summary": "Ship it.", "findings": []}\n' >"$BUMPER_VERDICT"
	;;
none)
	echo "reviewer: writing no verdict"
	;;
*)
	echo "reviewer: no review: line in the task" >&2
	exit 2
	;;
esac
