package evidence_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
)

// TestThreads: the threads a reply may answer are the task's comments' threads, each
// once; a review's body, a /revise comment and a finding are in none.
func TestThreads(t *testing.T) {
	task := wire.Task{Review: []wire.ReviewComment{
		{ID: 11, Kind: wire.ReviewKindInline, ThreadID: 10}, {ID: 5, Kind: wire.ReviewKindReview},
		{ID: 12, Kind: wire.ReviewKindInline, ThreadID: 10}, {ID: 13, Kind: wire.ReviewKindInline, ThreadID: 13},
		{Kind: wire.ReviewKindFinding, CreatedAt: time.Now()},
	}}
	if got := fmt.Sprint(evidence.Threads(task)); got != "[10 13]" {
		t.Fatalf("Threads = %s", got)
	}
}

// TestParseReplies: a valid file gives its replies in order, as written.
func TestParseReplies(t *testing.T) {
	got, err := evidence.ParseReplies([]byte(`{"schema_version": 1, "replies": [
	  {"thread_id": 10, "changed": true, "body": "Used the helper."},
	  {"thread_id": 13, "changed": false, "body": "Kept as is: the loop is clearer.\nSee widgets.sh."}
	]}`), []int64{10, 13})
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.Reply{{ThreadID: 10, Changed: true, Body: "Used the helper."}, {ThreadID: 13, Body: "Kept as is: the loop is clearer.\nSee widgets.sh."}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ParseReplies = %+v, want %+v", got, want)
	}
	if none, err := evidence.ParseReplies([]byte(`{"schema_version": 1, "replies": []}`), nil); err != nil || len(none) != 0 {
		t.Fatalf("no replies = %v, %v", none, err)
	}
}

// TestParseRepliesHostile plays the agent of a review round writing replies.json to post
// more than its answers: into threads the task never named (another pull request's, a
// reader's thread left out of the round), twice into one thread, floods of replies or
// text, keys the runner does not read (a "path" to comment on, an "event"), duplicate
// keys that parsers read differently, and files that are not JSON, not UTF-8 or too
// large. Each is refused whole, saying what was wrong: nothing of it is posted.
func TestParseRepliesHostile(t *testing.T) {
	one := func(reply string) string { return `{"schema_version": 1, "replies": [` + reply + `]}` }
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf(`{"thread_id": %d, "changed": true, "body": "x"}`, i+1)
	}
	threads := make([]int64, 60)
	for i := range threads {
		threads[i] = int64(i + 1)
	}
	for _, tt := range []struct {
		name, file, want string
	}{
		{"a thread the task did not name", one(`{"thread_id": 99, "changed": false, "body": "x"}`), "thread 99, which is not one of the task's review threads"},
		{"the same thread twice", `{"schema_version": 1, "replies": [{"thread_id": 10, "changed": true, "body": "a"}, {"thread_id": 10, "changed": false, "body": "b"}]}`, "a second time"},
		{"more replies than comments a round takes", `{"schema_version": 1, "replies": [` + strings.Join(many, ",") + `]}`, "/replies"},
		{"a body past its bound", one(`{"thread_id": 10, "changed": true, "body": "` + strings.Repeat("é", evidence.MaxReplyBody+1) + `"}`), "/replies/0/body"},
		{"a blank body", one(`{"thread_id": 10, "changed": true, "body": " \n\t"}`), "blank body"},
		{"an empty body", one(`{"thread_id": 10, "changed": true, "body": ""}`), "/replies/0/body"},
		{"a key the runner does not read", one(`{"thread_id": 10, "changed": true, "body": "x", "path": "README.md"}`), "path"},
		{"an event at the top", `{"schema_version": 1, "event": "APPROVE", "replies": []}`, "event"},
		{"a duplicate key", one(`{"thread_id": 10, "thread_id": 13, "changed": true, "body": "x"}`), "duplicate"},
		{"no changed", one(`{"thread_id": 10, "body": "x"}`), "changed"},
		{"a thread id as a string", one(`{"thread_id": "10", "changed": true, "body": "x"}`), "thread_id"},
		{"a negative thread", one(`{"thread_id": -10, "changed": true, "body": "x"}`), "thread_id"},
		{"a fractional thread", one(`{"thread_id": 10.5, "changed": true, "body": "x"}`), "thread_id"},
		{"another version", `{"schema_version": 2, "replies": []}`, "schema_version"},
		{"trailing data", `{"schema_version": 1, "replies": []} {"schema_version": 1, "replies": []}`, "replies.json"},
		{"not an object", `[{"thread_id": 10, "changed": true, "body": "x"}]`, "replies.json"},
		{"not UTF-8", one(`{"thread_id": 10, "changed": true, "body": "` + "\xff" + `"}`), "not valid UTF-8"},
		{"too large", `{"schema_version": 1, "replies": [], "pad": "` + strings.Repeat(" ", 1<<20) + `"}`, "at most"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evidence.ParseReplies([]byte(tt.file), append([]int64{10, 13}, threads...))
			if err == nil || got != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseReplies = %v, %v; want a refusal saying %q", got, err, tt.want)
			}
		})
	}
}
