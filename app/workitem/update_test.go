package workitem_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// TestUpdateRound: a commit on main that conflicts with the pull request in review
// starts an update round (stage update) to the base's new head, within
// bounds.update_rounds; the run gets the pull request, its head and the head to merge.
func TestUpdateRound(t *testing.T) {
	e := newEnv(t, oneUpdate)
	it := e.inReview()
	push := e.conflictOnMain()
	e.must(e.pushEvent(push))
	rec := e.expect(it.n, ledger.Running)
	att := rec.Attempts[len(rec.Attempts)-1]
	if att.Stage != workitem.StageUpdate || att.UpdateTo != push.After || rec.BaseMoved != "" || !strings.Contains(rec.Reason, "update round 1 of 1") {
		t.Fatalf("attempt %+v, record %+v", att, rec)
	}
	resp, claims, err := e.exchange(e.lastRun())
	e.must(err)
	if resp.Stage != workitem.StageUpdate || resp.UpdateTo != push.After || resp.HeadCommit != it.head || resp.PullRequest != it.pr || resp.Branch != workitem.WorkBranchName(it.n, 1) {
		t.Fatalf("exchange %+v", resp)
	}
	task, err := e.svc.Task(e.ctx, claims)
	e.must(err)
	if task.UpdateTo != push.After || task.Round != 1 || task.HeadCommit != it.head {
		t.Fatalf("task %+v", task)
	}
	// The run merges and resolves; its head is reviewed as any round's.
	var evs []workitem.PullEvent
	it.head, evs = e.gh.PushMerge(repoName, it.pr, e.gh.Bot(), push.After, map[string]string{"widgets.sh": "echo 4 # resolved\n"})
	for _, ev := range evs {
		e.must(e.pullEvent(ev))
	}
	e.must(e.svc.Progress(e.ctx, claims, wire.Progress{State: "reviewing", PullRequest: it.pr, HeadCommit: it.head}))
	it.claims = e.grant(e.lastRun())
	e.passes(it)
	e.expect(it.n, ledger.InReview)
	// Past the bound, another conflict is left to people.
	_, again := e.gh.PushBase(repoName, "main", maintainer, map[string]string{"widgets.sh": "echo 6\n"})
	e.must(e.pushEvent(again))
	rec = e.expect(it.n, ledger.InReview)
	if !strings.Contains(rec.Reason, "the 1 update(s) bounds.update_rounds allows") || len(e.runs()) != 4 {
		t.Fatalf("reason %q, runs %v", rec.Reason, e.stages())
	}
}

// TestBaseMovedWhileRunning: the base moving while a run works is looked at once the
// pull request is back in review, one run at a time.
func TestBaseMovedWhileRunning(t *testing.T) {
	e := newEnv(t, "")
	it := e.reviewing()
	it.claims = e.grant(it.run)
	push := e.conflictOnMain()
	e.must(e.pushEvent(push))
	if rec := e.expect(it.n, ledger.Reviewing); rec.BaseMoved != push.After || len(e.runs()) != 2 {
		t.Fatalf("base moved %q, runs %v", rec.BaseMoved, e.stages())
	}
	e.passes(it)
	rec := e.expect(it.n, ledger.Running)
	if att := rec.Attempts[len(rec.Attempts)-1]; att.Stage != workitem.StageUpdate || att.UpdateTo != push.After {
		t.Fatalf("attempt %+v", att)
	}
}

// TestUpdateRoundAfterPushesInARow: two pushes to main land before serve looks at the
// first (another item's merge, then a conflicting commit). GitHub judges the merge
// against main as it is now, so the round merges main's head, not the first push's: one
// round settles both, and the second push's delivery starts none.
func TestUpdateRoundAfterPushesInARow(t *testing.T) {
	e := newEnv(t, oneUpdate)
	it := e.inReview()
	first := e.elsewhereOnMain()
	second := e.conflictOnMain()
	e.must(e.pushEvent(first))
	rec := e.expect(it.n, ledger.Running)
	if att := rec.Attempts[len(rec.Attempts)-1]; att.Stage != workitem.StageUpdate || att.UpdateTo != second.After ||
		!strings.Contains(rec.Reason, "main moved to "+second.After[:12]) {
		t.Fatalf("attempt %+v (first push %.12s, second %.12s); reason %q", att, first.After, second.After, rec.Reason)
	}
	runs := len(e.runs())
	e.must(e.pushEvent(second))
	if rec := e.expect(it.n, ledger.Running); len(e.runs()) != runs || rec.BaseMoved != second.After {
		t.Fatalf("the second push's delivery: runs %v, base moved %q", e.stages(), rec.BaseMoved)
	}
}

// TestUpdateBranch: a pull request only behind, where main's protection requires
// up-to-date branches, is updated by GitHub (update-branch, no VM). Its new head gets
// the bumper/verdict check: carried over when the diff is the one the reviewer judged,
// else from a new review run.
func TestUpdateBranch(t *testing.T) {
	t.Run("the diff unchanged carries the verdict over", func(t *testing.T) {
		e := newEnv(t, "")
		e.gh.RequireUpToDate(repoName, "main", true)
		it := e.inReview()
		e.must(e.pushEvent(e.elsewhereOnMain()))
		rec := e.expect(it.n, ledger.InReview)
		if rec.Updating == nil || rec.Updating.From != it.head || rec.BranchUpdates != 1 || e.gh.Calls("UpdateBranch") != 1 || len(e.runs()) != 2 {
			t.Fatalf("record %+v, runs %v", rec, e.stages())
		}
		sent := e.gh.Sent()
		if len(sent) != 1 || sent[0].Sender != e.gh.Bot() {
			t.Fatalf("GitHub's push %+v", sent)
		}
		e.must(e.pullEvent(sent[0]))
		rec = e.expect(it.n, ledger.InReview)
		head := sent[0].After
		checks := e.gh.CheckRunsOn(repoName, head)
		if rec.PullHead != head || rec.Updating != nil || rec.HumanPush != nil || len(checks) != 1 || checks[0].Name != workitem.CheckVerdict ||
			checks[0].Conclusion != "success" || !strings.Contains(checks[0].Summary, "carried over") || rec.Verdict.Head != head {
			t.Fatalf("record %+v, checks on the new head %+v", rec, checks)
		}
	})
	t.Run("a changed diff goes to a review run", func(t *testing.T) {
		e := newEnv(t, "")
		e.gh.RequireUpToDate(repoName, "main", true)
		it := e.inReview()
		e.must(e.pushEvent(e.elsewhereOnMain()))
		e.gh.SetPullFiles(repoName, it.pr, workitem.PullFile{Path: "widgets.sh", Patch: "@@ -2 +2 @@\n-echo 3\n+echo 4"})
		sent := e.gh.Sent()
		e.must(e.pullEvent(sent[0]))
		e.expect(it.n, ledger.Reviewing)
		resp, _, err := e.exchange(e.lastRun())
		e.must(err)
		if resp.Stage != workitem.StageReview || resp.HeadCommit != sent[0].After {
			t.Fatalf("exchange %+v", resp)
		}
	})
	t.Run("GitHub saying behind", func(t *testing.T) {
		e := newEnv(t, "")
		e.gh.Protect(repoName, "main", &workitem.Protection{RequiredChecks: []workitem.RequiredCheck{{Name: ciCheck, AppID: ciApp}}})
		e.gh.RequireUpToDate(repoName, "main", true)
		it := e.inReview()
		e.must(e.pushEvent(e.elsewhereOnMain()))
		if rec := e.record(it.n); rec.Updating == nil {
			t.Fatalf("record %+v", rec)
		}
	})
	t.Run("not required to be up to date", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.inReview()
		e.must(e.pushEvent(e.elsewhereOnMain()))
		if rec := e.record(it.n); rec.Updating != nil || rec.BaseMoved != "" || e.gh.Calls("UpdateBranch") != 0 {
			t.Fatalf("record %+v", rec)
		}
	})
}

// TestUpdatesThatDoNotStart: where the base moving starts no update: Bumper stands
// down after a person's push, never pushes under a person's approval, and waits for
// GitHub to know whether the pull request merges.
func TestUpdatesThatDoNotStart(t *testing.T) {
	cases := []struct {
		name   string
		reach  func(e *env) *item
		reason string
	}{
		{name: "a person pushed", reach: func(e *env) *item { it := e.inReview(); e.humanPush(it); return it }, reason: "pushed to `bumper/1-1`"},
		{name: "a person approved", reach: func(e *env) *item {
			it := e.inReview()
			e.review(it, maintainer, "APPROVED", "")
			return it
		}, reason: "@maintainer approved the pull request"},
		{name: "update rounds off", reach: func(e *env) *item {
			e.gh.Commit(repoName, "main", map[string]string{".github/bumper.yml": "version: 1\nbounds:\n  update_rounds: 0\n"})
			return e.inReview()
		}, reason: "bounds.update_rounds: 0"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "")
			it := tt.reach(e)
			runs := len(e.runs())
			e.must(e.pushEvent(e.conflictOnMain()))
			rec := e.expect(it.n, ledger.InReview)
			if len(e.runs()) != runs || !strings.Contains(rec.Reason, tt.reason) {
				t.Fatalf("runs %v, reason %q; want it to say %q", e.stages(), rec.Reason, tt.reason)
			}
		})
	}
	t.Run("GitHub still computing the merge", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.inReview()
		push := e.conflictOnMain()
		e.gh.SlowMerge(repoName, it.pr, 100)
		reads := e.gh.Calls("PullRequest")
		err := e.pushEvent(push)
		if n := e.gh.Calls("PullRequest") - reads; n != 5 {
			t.Fatalf("%d reads of the pull request; want the bound, 5", n)
		}
		if err == nil || !strings.Contains(err.Error(), "has not computed whether the pull request merges") {
			t.Fatalf("got %v; want the delivery to fail, to be handled again", err)
		}
		if rec := e.expect(it.n, ledger.InReview); rec.BaseMoved != "" || len(e.runs()) != 2 {
			t.Fatalf("record %+v", rec)
		}
		var ref *workitem.Refusal
		if errors.As(err, &ref) {
			t.Fatal("a refusal")
		}
	})
	t.Run("a push to another branch", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.inReview()
		_, ev := e.gh.PushBase(repoName, "release", maintainer, map[string]string{"widgets.sh": "echo 9\n"})
		before := e.record(it.n)
		e.must(e.pushEvent(ev))
		if after := e.record(it.n); after.Revision != before.Revision || !slices.Equal(e.stages(), []string{workitem.StageImplement, workitem.StageReview}) {
			t.Fatalf("revision %d → %d", before.Revision, after.Revision)
		}
	})
}
