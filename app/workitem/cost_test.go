package workitem_test

import (
	"maps"
	"reflect"
	"testing"

	"github.com/bumperdev/bumper/app/workitem"
)

// calls counts the App's calls to GitHub so far, by method.
func (e *env) calls() map[string]int {
	out := map[string]int{}
	t := reflect.TypeFor[workitem.GitHub]()
	for i := range t.NumMethod() {
		out[t.Method(i).Name] = e.gh.Calls(t.Method(i).Name)
	}
	return out
}

// callsSince is what the App called since before, by method.
func (e *env) callsSince(before map[string]int) map[string]int {
	out := map[string]int{}
	for m, n := range e.calls() {
		if d := n - before[m]; d != 0 {
			out[m] = d
		}
	}
	return out
}

// TestRoundCosts counts the GitHub API calls each step of the conversation costs the
// App, as docs/conversation.md lists them ("What it costs in GitHub API calls"): a
// change here is a change there. GitHub is the fake, whose first read of a pull request
// after a push says GitHub is still computing whether it merges, as GitHub's does.
func TestRoundCosts(t *testing.T) {
	check := func(t *testing.T, what string, got, want map[string]int) {
		t.Helper()
		if !maps.Equal(got, want) {
			t.Errorf("%s cost %v; want %v (and docs/conversation.md to say so)", what, got, want)
		}
	}
	e := newEnv(t, "")
	it := e.inReview()
	before := e.calls()
	e.review(it, writer, "CHANGES_REQUESTED", askRename, inline()...)
	check(t, "a review starting a round", e.callsSince(before), map[string]int{"Comment": 2, "Permission": 2, "Reviews": 1, "Review": 1, "PullComments": 1,
		"File": 1, "CreateRef": 1, "Dispatch": 1, "EditComment": 1, "AddLabel": 1, "RemoveLabel": 1, "CreateComment": 1})
	before = e.calls()
	_, claims, err := e.exchange(e.lastRun())
	e.must(err)
	check(t, "the round's exchange", e.callsSince(before), map[string]int{"PullRequest": 1, "Issue": 1, "Comment": 3, "File": 1, "CreateRef": 1,
		"EditComment": 1, "RepoToken": 1})
	before = e.calls()
	_, err = e.svc.Task(e.ctx, claims)
	e.must(err)
	check(t, "the round's task", e.callsSince(before), map[string]int{"Comment": 1, "Issue": 1, "Comments": 1, "Review": 1, "PullComments": 1, "Permission": 1})
	before = e.calls()
	e.comment(it.n, writer, "/steer keep it short")
	check(t, "a /steer", e.callsSince(before), map[string]int{"Comment": 2, "Permission": 1, "File": 1, "EditComment": 1, "CreateComment": 1})
	before = e.calls()
	_, err = e.svc.ShouldStop(e.ctx, claims)
	e.must(err)
	check(t, "a poll for steers", e.callsSince(before), map[string]int{"Comment": 1})
	before = e.calls()
	_, err = e.svc.ShouldStop(e.ctx, claims)
	e.must(err)
	check(t, "another poll within 10 s", e.callsSince(before), map[string]int{})

	e = newEnv(t, "")
	e.gh.RequireUpToDate(repoName, "main", true)
	e.inReview()
	before = e.calls()
	e.must(e.pushEvent(e.elsewhereOnMain()))
	check(t, "a base push, the pull request behind", e.callsSince(before), map[string]int{"OpenPulls": 1, "Comment": 2, "PullRequest": 2, "UpToDateRequired": 1, "Reviews": 1,
		"PullFiles": 1, "UpdateBranch": 1, "EditComment": 1})
	before = e.calls()
	for _, ev := range e.gh.Sent() {
		e.must(e.pullEvent(ev))
	}
	check(t, "GitHub's push of the update", e.callsSince(before), map[string]int{"Comment": 2, "PullFiles": 1, "CreateCheckRun": 1, "RequiredChecks": 1,
		"CheckRuns": 1, "EditComment": 1})

	e = newEnv(t, "")
	e.inReview()
	before = e.calls()
	e.must(e.pushEvent(e.conflictOnMain()))
	check(t, "a base push, the pull request conflicting", e.callsSince(before), map[string]int{"OpenPulls": 1, "Comment": 2, "PullRequest": 2, "BranchHead": 1, "Reviews": 1, "File": 1,
		"CreateRef": 1, "Dispatch": 1, "EditComment": 1, "AddLabel": 1, "RemoveLabel": 1})
}
