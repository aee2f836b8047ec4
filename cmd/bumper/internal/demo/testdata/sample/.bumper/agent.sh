#!/bin/sh
# The demo's scripted agent, run by the command harness inside the VM in the checkout:
# it makes the change the issue asks for, as a coding agent would, and records the one
# judgement call it made; in a review round it answers the review's comments, with a
# commit and a reply in each thread. It is a stand-in for a model, not one.
set -eu
echo "agent: reading the task"
sed -n '1,5p' "$BUMPER_TASK"
if grep -q '^## Review round [0-9]*: what the writers asked$' "$BUMPER_TASK"; then
	# A review round (docs/conversation.md): the writers' comments are quoted in TASK.md
	# after a "│ " mark, each with the thread a reply goes to.
	round=$(sed -n 's/^## Review round \([0-9]*\): what the writers asked$/\1/p' "$BUMPER_TASK" | head -n 1)
	threads=$(sed -n 's/^.*Its review thread is \([0-9]*\): to answer there.*$/\1/p' "$BUMPER_TASK" | sort -u)
	echo "agent: review round $round, threads: $(echo $threads)"
	if grep -q '^│ .*range boxes' "$BUMPER_TASK"; then
		sed -i 's/^\tfor i := 0; i < len(boxes); i++ {$/\tfor _, n := range boxes {/; s/^\t\ttotal += boxes\[i\]$/\t\ttotal += n/' widgets.go
		gofmt -l . | grep . && { echo "agent: gofmt disagrees" >&2; exit 1; }
		git commit -q -am "Range over the boxes in Total"
		changed=true body="Total now ranges over the boxes: no index, so no box to skip."
	else
		changed=false body="This scripted agent only knows the change to a range loop; nothing else was asked of it that it can make."
	fi
	{
		printf '{"schema_version": 1, "replies": ['
		sep=
		for t in $threads; do
			printf '%s{"thread_id": %s, "changed": %s, "body": "%s"}' "$sep" "$t" "$changed" "$body"
			sep=,
		done
		printf ']}\n'
	} >"$BUMPER_OUT/replies.json"
	echo "agent: answered the review (changed: $changed)"
	exit 0
fi
sed -i 's/for i := 1; i < len(boxes); i++ {/for i := 0; i < len(boxes); i++ {/' widgets.go
gofmt -l . | grep . && { echo "agent: gofmt disagrees" >&2; exit 1; }
git commit -q -am "Count the first box in Total"
cat >"$BUMPER_DECISIONS" <<'JSON'
{"schema_version": 1, "decisions": [
 {"question": "Fix the loop's start or rewrite it as a range loop?", "choice": "Start the loop at 0.", "rationale": "The smallest change that fixes the bug; a rewrite is a matter of style the issue does not ask for.", "confidence": 0.9}
]}
JSON
echo "agent: Total now starts at the first box"
