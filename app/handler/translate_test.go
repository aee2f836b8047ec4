package handler

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
)

// The payloads in testdata are GitHub's own examples (octokit/webhooks, as
// ../shared/fixtures/webhooks holds them), byte for byte.

func payload(t *testing.T, file string, v any, edit func(map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if raw, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := parse(raw, v, file); err != nil {
		t.Fatal(err)
	}
}

// TestReviewEventOf: a real pull_request_review payload, whose state GitHub writes in
// lower case, reads as the review the REST API lists, state upper-cased.
func TestReviewEventOf(t *testing.T) {
	var ev gogithub.PullRequestReviewEvent
	payload(t, "pull_request_review.submitted.json", &ev, func(m map[string]any) {
		m["review"].(map[string]any)["state"] = "changes_requested"
		m["review"].(map[string]any)["body"] = "Please rename it."
	})
	got := reviewEventOf("d-1", &ev)
	want := workitem.ReviewEvent{Delivery: "d-1", Action: "submitted", Repo: workitem.Repo{FullName: "Codertocat/Hello-World", DefaultBranch: "master"},
		Number: 2, HeadRef: "changes", Review: workitem.ReviewInfo{ID: 237895671, User: "Codertocat", UserType: "User", Association: "OWNER",
			State: "CHANGES_REQUESTED", CommitID: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", Body: "Please rename it.",
			SubmittedAt: time.Date(2019, 5, 15, 15, 20, 38, 0, time.UTC)}}
	got.Review.SubmittedAt = got.Review.SubmittedAt.UTC()
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// TestPushEventOf: a push that moved a branch is taken; a tag, and a branch created,
// are not (no pull request's base moved).
func TestPushEventOf(t *testing.T) {
	var moved, created, tag gogithub.PushEvent
	payload(t, "push.new-branch.json", &moved, func(m map[string]any) { m["created"] = false })
	payload(t, "push.new-branch.json", &created, nil)
	payload(t, "push.tag.json", &tag, nil)
	got, ok := pushEventOf("d-2", &moved)
	want := workitem.PushEvent{Delivery: "d-2", Repo: workitem.Repo{FullName: "Codertocat/Hello-World", DefaultBranch: "master"},
		Ref: "refs/heads/master", After: "6113728f27ae82c7b1a177c8d03f9e96e0adf246", Sender: "Codertocat"}
	if !ok || got != want {
		t.Fatalf("got %+v, %v\nwant %+v", got, ok, want)
	}
	for name, ev := range map[string]*gogithub.PushEvent{"created": &created, "tag": &tag} {
		if got, ok := pushEventOf("d", ev); ok {
			t.Errorf("a %s push was taken: %+v", name, got)
		}
	}
}
