package workitem_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
)

// statusBody is the App's status comment on #n.
func (e *env) statusBody(n int) string {
	e.t.Helper()
	for _, c := range e.gh.IssueComments(repoName, n) {
		if ledger.IsStatusComment(c.Body) && c.Author == e.gh.Bot() {
			return c.Body
		}
	}
	e.t.Fatalf("#%d has no status comment", n)
	return ""
}

// TestQueuePlace: while dispatched runs wait for a runner, each waiting item's status
// comment shows its place among the repository's Bumper runs, first dispatched first,
// with an estimate from the repository's recent run durations; a run a runner takes
// says so and leaves the queue. Places are written again at most once a minute.
func TestQueuePlace(t *testing.T) {
	e := newEnv(t, "")
	first, second, third := e.running(), e.running(), e.running()

	// A runner takes the first: the other two wait, 1 and 2 of 2, with no run yet to
	// estimate from.
	e.must(e.runEvent(e.gh.StartRun(repoName, first.run.ID, "runner-7")))
	if r := e.record(first.n); r.Queue != nil || !strings.Contains(e.statusBody(first.n), "started on runner-7") {
		t.Fatalf("the started run: queue %+v, status:\n%s", r.Queue, e.statusBody(first.n))
	}
	for i, it := range []*item{second, third} {
		q := e.record(it.n).Queue
		if q == nil || q.Position != i+1 || q.Of != 2 || q.Estimate != 0 {
			t.Fatalf("#%d's place %+v; want %d of 2, no estimate", it.n, q, i+1)
		}
	}
	if body := e.statusBody(third.n); !strings.Contains(body, "waiting for a runner: 2 of 2") || !strings.Contains(body, "no run of this repository to estimate from yet") {
		t.Fatalf("status:\n%s", body)
	}

	// The first ends after 12 minutes on its runner: the estimates go by it.
	e.clock.Advance(12 * time.Minute)
	e.must(e.runEvent(e.gh.CompleteRun(repoName, first.run.ID, "failure")))
	for i, it := range []*item{second, third} {
		q := e.record(it.n).Queue
		if q == nil || q.Estimate != time.Duration(i+1)*12*time.Minute {
			t.Fatalf("#%d's place %+v; want an estimate of %v", it.n, q, time.Duration(i+1)*12*time.Minute)
		}
	}
	if body := e.statusBody(third.n); !strings.Contains(body, "starts in about 24 min") {
		t.Fatalf("status:\n%s", body)
	}

	// Within the minute, a change of place waits for the next refresh.
	before := e.record(third.n).Revision
	e.must(e.runEvent(e.gh.StartRun(repoName, second.run.ID, "runner-8")))
	if r := e.record(third.n); r.Revision != before || r.Queue.Position != 2 {
		t.Fatalf("#%d rewritten within the minute: revision %d → %d, place %+v", third.n, before, r.Revision, r.Queue)
	}
	e.clock.Advance(workitem.QueueRefresh)
	e.must(e.runEvent(e.gh.StartRun(repoName, second.run.ID, "runner-8")))
	if q := e.record(third.n).Queue; q == nil || q.Position != 1 || q.Of != 1 || q.Estimate != 12*time.Minute {
		t.Fatalf("#%d's place after the refresh %+v; want 1 of 1 in 12 minutes", third.n, q)
	}
}
