package e2e

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

// The week's scenarios: what the maintainers (and a reader) do with one work item.
const (
	scenarioMerge      = "merge"         // approved, its pull request merged
	scenarioNoise      = "reader-noise"  // a reader's /approve and chatter first, refused
	scenarioEdited     = "edited"        // the issue edited before the approval
	scenarioEditedLate = "edited-late"   // the issue edited while its run works: approved again
	scenarioStop       = "stop"          // /stop while the agent works
	scenarioRunnerKill = "runner-killed" // the runner killed mid-run, /retry, then /stop
	scenarioFix        = "fix-round"     // the required CI fails on its pull request: a fix round
	scenarioReview     = "review-round"  // the maintainer requests changes inline: a revise round
	scenarioConflict   = "conflict"      // main changes what its pull request changes: an update round
	scenarioClose      = "closed"        // its pull request closed unmerged
	scenarioTwice      = "approve-twice" // two /approve comments at once: one run
	scenarioOpen       = "left-open"     // its pull request left for next week
)

// scenarios repeat in this order over the week's items; the short week's twelve play
// each once.
var scenarios = []string{scenarioMerge, scenarioFix, scenarioEdited, scenarioStop, scenarioRunnerKill, scenarioReview,
	scenarioNoise, scenarioEditedLate, scenarioConflict, scenarioClose, scenarioTwice, scenarioOpen, scenarioMerge, scenarioMerge}

// agentFor is the scripted agent's scenario for a week's scenario.
func agentFor(sc string) string {
	switch sc {
	case scenarioStop, scenarioRunnerKill, scenarioEditedLate:
		return "slow" // works until stopped (edited-late: until the edit voids its approval)
	case scenarioFix:
		return "changelog" // forgets the note's changelog entry until the CI says so
	default:
		return "note"
	}
}

// repoFor is where the i-th item lives: in turn, but a fix round needs the CI that
// gadgets requires.
func (w *week) repoFor(i int, sc string) string {
	if sc == scenarioFix && slices.Contains(w.plan.repos, weekProtected) {
		return weekProtected
	}
	return w.plan.repos[i%len(w.plan.repos)]
}

// started are the states an approval moves an item to, at once or soon.
var started = inState(ledger.Running, ledger.Verifying, ledger.Reviewing, ledger.InReview, ledger.Done, ledger.Failed, ledger.Stopped)

// item plays one work item from its issue to its end.
func (w *week) item(i int, repo, sc string) {
	mae := w.user(ghemu.DefaultMaintainer)
	note := fmt.Sprintf("week-item-%d", i+1)
	title := fmt.Sprintf("Week item %d: count to 4", i+1)
	body := "test.sh wants 4 widgets, and a note of this item.\n\nscenario: " + agentFor(sc) + "\nnote: " + note
	is, _, err := mae.Issues.Create(w.ctx, ghemu.DefaultOrg, repo, &gogithub.IssueRequest{Title: &title, Body: &body})
	if err != nil {
		w.t.Errorf("item %d: opening its issue: %v", i+1, err)
		return
	}
	n := is.GetNumber()
	o := &itemOutcome{repo: repo, issue: n, scenario: sc, note: note}
	w.mu.Lock()
	w.outcomes[fmt.Sprintf("%s#%d", repo, n)] = o
	w.mu.Unlock()
	defer func() {
		r := w.record(repo, n)
		if r != nil {
			o.state, o.reason = r.State, r.Reason
			if r.PullRequest != 0 && !slices.Contains(o.pulls, r.PullRequest) {
				o.pulls = append(o.pulls, r.PullRequest)
			}
		}
	}()
	if _, _, err := mae.Issues.AddLabelsToIssue(w.ctx, ghemu.DefaultOrg, repo, n, []string{"agent:implement"}); err != nil {
		w.t.Errorf("%s#%d: labelling: %v", repo, n, err)
		return
	}
	if r, ok := w.waitFor(repo, n, 3*time.Minute, inState(ledger.AwaitingApproval)); !ok {
		w.t.Errorf("%s#%d: not awaiting approval 3 minutes after its label: %s", repo, n, stateOf(r))
		return
	}
	switch sc {
	case scenarioNoise:
		w.comment(ghemu.DefaultReader, repo, n, "/approve")
		w.comment(ghemu.DefaultReader, repo, n, "Looks good to me, ship it!")
		time.Sleep(2 * time.Second)
		if r := w.record(repo, n); r == nil || r.State != ledger.AwaitingApproval {
			w.t.Errorf("%s#%d: a reader's /approve moved it: %s", repo, n, stateOf(r))
		}
	case scenarioEdited:
		before := w.record(repo, n)
		edited := body + "\n\nAlso: keep test.sh as it is."
		if _, _, err := mae.Issues.Edit(w.ctx, ghemu.DefaultOrg, repo, n, &gogithub.IssueRequest{Body: &edited}); err != nil {
			w.t.Errorf("%s#%d: editing: %v", repo, n, err)
			return
		}
		// The approval must bind to the text as edited: wait until the status comment shows it.
		if r, ok := w.waitFor(repo, n, 2*time.Minute, func(r *ledger.Record) bool {
			return r.State == ledger.AwaitingApproval && before != nil && r.SpecRevision != before.SpecRevision
		}); !ok {
			w.t.Errorf("%s#%d: the edit never reached the status comment: %s", repo, n, stateOf(r))
			return
		}
	}
	approve := "/approve"
	if sc == scenarioEdited {
		// Just after an edit a bare /approve is refused (it could approve text the
		// writer has not read): the maintainer names the revision the status comment shows.
		approve = "/approve " + w.sealer.ShortID(w.record(repo, n).TextRevision())
	}
	w.approve(o, approve, sc == scenarioTwice)
	switch sc {
	case scenarioStop:
		w.stopWhenSlow(o)
	case scenarioRunnerKill:
		run, ok := w.slowRun(o)
		if !ok {
			return
		}
		pid, err := runPID(w.bin, run.ID)
		if err != nil {
			w.t.Errorf("%s#%d: %v", repo, n, err)
			return
		}
		w.note("runner SIGKILL", run.ID)
		w.t.Logf("week: SIGKILL the runner of %s#%d (run %d, pid %d)", repo, n, run.ID, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if r, ok := w.waitFor(repo, n, 5*time.Minute, inState(ledger.Failed)); !ok || !strings.Contains(r.Reason, "/retry") {
			w.t.Errorf("%s#%d: after its runner's kill: %s", repo, n, stateOf(r))
			return
		}
		w.retry(o)
		w.stopWhenSlow(o)
	case scenarioEditedLate:
		w.editWhileWorking(o, body)
	default:
		w.pullRequest(o, sc)
	}
}

// comment posts body as who; an empty body posts nothing.
func (w *week) comment(who, repo string, n int, body string) {
	if body == "" {
		return
	}
	if _, _, err := w.user(who).Issues.CreateComment(w.ctx, ghemu.DefaultOrg, repo, n, &gogithub.IssueComment{Body: &body}); err != nil {
		w.t.Errorf("%s#%d: %s's comment: %v", repo, n, who, err)
	}
}

// approve has the maintainer write cmd (/approve, /retry) and checks the item starts:
// an approval that starts nothing within three minutes is lost.
func (w *week) approve(o *itemOutcome, cmd string, twice bool) {
	before := w.record(o.repo, o.issue)
	attempts := 0
	if before != nil {
		attempts = len(before.Attempts)
	}
	o.approvals++
	w.comment(ghemu.DefaultMaintainer, o.repo, o.issue, cmd)
	if twice {
		w.comment(ghemu.DefaultMaintainer, o.repo, o.issue, cmd)
	}
	if r, ok := w.waitFor(o.repo, o.issue, 3*time.Minute, func(r *ledger.Record) bool {
		return len(r.Attempts) > attempts && started(r) || lapsed(before, r)
	}); !ok {
		o.lost++
		w.t.Errorf("%s#%d: %s started nothing within 3 minutes: %s", o.repo, o.issue, cmd, stateOf(r))
	}
}

// metFullCache says whether the item's latest run found the image cache full.
func (w *week) metFullCache(o *itemOutcome) bool {
	runs := w.itemRuns(o)
	if !w.plan.cacheFull || len(runs) == 0 {
		return false
	}
	log, _ := w.e.RunLog(ghemu.DefaultOrg, o.repo, runs[len(runs)-1].ID)
	return strings.Contains(string(log), "free in "+w.fullCache())
}

// roundFailed says whether the item's latest run was a round on its pull request that
// ended without a new head.
func roundFailed(r *ledger.Record) bool {
	a := r.CurrentAttempt()
	return a != nil && a.Stage != wire.StageImplement && a.Outcome != "" && a.Outcome != "success" && a.HeadCommit == ""
}

// lapsed says whether an approval given at before no longer holds, the item asking
// for approval again with its reason (the base branch moved before the run got its
// credentials): not lost, answered.
func lapsed(before, r *ledger.Record) bool {
	return r.State == ledger.AwaitingApproval && strings.Contains(r.Reason, "after approval") && (before == nil || r.Reason != before.Reason)
}

// retry has the maintainer /retry a failed item, which asks for approval again, and
// approve it.
func (w *week) retry(o *itemOutcome) {
	if r := w.record(o.repo, o.issue); r != nil && strings.Contains(r.Reason, "attempt bound is reached") {
		w.t.Logf("%s#%d used its attempts, the maintainer leaves it: %s", o.repo, o.issue, stateOf(r))
		return
	}
	w.comment(ghemu.DefaultMaintainer, o.repo, o.issue, "/retry")
	if r, ok := w.waitFor(o.repo, o.issue, 3*time.Minute, inState(ledger.AwaitingApproval)); !ok {
		o.lost++
		w.t.Errorf("%s#%d: /retry did not ask for approval within 3 minutes: %s", o.repo, o.issue, stateOf(r))
		return
	}
	// Named by its revision: a bare /approve is refused for a while after an edit.
	w.approve(o, "/approve "+w.sealer.ShortID(w.record(o.repo, o.issue).TextRevision()), false)
}

// itemRuns are the workflow runs dispatched for the item, oldest first.
func (w *week) itemRuns(o *itemOutcome) []ghemu.RunInfo {
	runs, _ := w.e.Runs(ghemu.DefaultOrg, o.repo)
	var out []ghemu.RunInfo
	for _, r := range runs {
		if r.Inputs["work_item"] == fmt.Sprintf("%s/%s#%d", ghemu.DefaultOrg, o.repo, o.issue) {
			out = append(out, r)
		}
	}
	return out
}

// slowRun waits until the item's latest run has its agent working (the slow scenario).
func (w *week) slowRun(o *itemOutcome) (ghemu.RunInfo, bool) {
	deadline := time.Now().Add(8 * time.Minute)
	asked, retried := 0, false
	for time.Now().Before(deadline) {
		switch r := w.record(o.repo, o.issue); {
		case r == nil:
		case r.State == ledger.AwaitingApproval && asked < 3:
			asked++ // the approval lapsed (the base moved): approve again
			w.t.Logf("%s#%d asks for approval again: %s", o.repo, o.issue, stateOf(r))
			w.approve(o, "/approve "+w.sealer.ShortID(r.TextRevision()), false)
		case r.State == ledger.Failed && !retried:
			retried = true // the run failed before its agent worked (a full cache, say)
			w.t.Logf("%s#%d failed, the maintainer retries: %s", o.repo, o.issue, stateOf(r))
			w.retry(o)
		case r.State.Terminal():
			w.t.Logf("%s#%d ended %s", o.repo, o.issue, stateOf(r))
			return ghemu.RunInfo{}, false
		}
		if runs := w.itemRuns(o); len(runs) > 0 {
			run := runs[len(runs)-1]
			if log, _ := w.e.RunLog(ghemu.DefaultOrg, o.repo, run.ID); strings.Contains(string(log), "agent: working slowly") {
				return run, true
			}
		}
		time.Sleep(time.Second)
	}
	w.t.Errorf("%s#%d: its agent never started working within 8 minutes: %s", o.repo, o.issue, stateOf(w.record(o.repo, o.issue)))
	return ghemu.RunInfo{}, false
}

// stopWhenSlow has the maintainer /stop the item once its agent works.
func (w *week) stopWhenSlow(o *itemOutcome) {
	if _, ok := w.slowRun(o); !ok {
		return
	}
	w.comment(ghemu.DefaultMaintainer, o.repo, o.issue, "/stop")
	if r, ok := w.waitFor(o.repo, o.issue, 5*time.Minute, inState(ledger.Stopped)); !ok {
		w.t.Errorf("%s#%d: not stopped 5 minutes after /stop: %s", o.repo, o.issue, stateOf(r))
	}
}

// pullRequest waits for the item's pull request, plays the scenario's round on it, and
// has the maintainer merge it, close it or leave it, as the scenario says. Where CI is
// required, the maintainer merges once it passed.
func (w *week) pullRequest(o *itemOutcome, sc string) {
	r := w.awaitPull(o, "")
	if r == nil {
		return
	}
	switch sc {
	case scenarioReview:
		r = w.reviewRound(o, r)
	case scenarioConflict:
		r = w.conflictRound(o, r)
	}
	if r != nil && o.repo == weekProtected && sc != scenarioOpen && sc != scenarioClose {
		r = w.passCI(o, r, sc == scenarioFix)
	}
	if r == nil {
		return
	}
	o.pulls = append(o.pulls, r.PullRequest)
	mae := w.user(ghemu.DefaultMaintainer)
	switch sc {
	case scenarioOpen:
		return
	case scenarioClose:
		closed := "closed"
		if _, _, err := mae.PullRequests.Edit(w.ctx, ghemu.DefaultOrg, o.repo, r.PullRequest, &gogithub.PullRequest{State: &closed}); err != nil {
			w.t.Errorf("%s#%d: closing #%d: %v", o.repo, o.issue, r.PullRequest, err)
			return
		}
	default:
		if _, _, err := mae.PullRequests.Merge(w.ctx, ghemu.DefaultOrg, o.repo, r.PullRequest, "", &gogithub.PullRequestOptions{MergeMethod: "merge"}); err != nil {
			w.t.Errorf("%s#%d: merging #%d: %v", o.repo, o.issue, r.PullRequest, err)
			return
		}
		o.merged = true
	}
	if r, ok := w.waitFor(o.repo, o.issue, 3*time.Minute, func(r *ledger.Record) bool { return r.State.Terminal() }); !ok {
		w.t.Errorf("%s#%d: its pull request #%d is %s, and the item is still %s", o.repo, o.issue, r.PullRequest, sc, stateOf(r))
	}
}

// awaitPull waits until the item is in review with a pull request whose head is not old
// (its first, when old is empty; a round's otherwise), and returns its record; nil when
// the item ended otherwise. An approval that lapsed is given again, as the status comment
// asks; a first run that failed (GitHub's faults can fail one) is retried once, as a
// maintainer reading its reason would.
func (w *week) awaitPull(o *itemOutcome, old string) *ledger.Record {
	retried, asked := false, 0
	for {
		r, ok := w.waitFor(o.repo, o.issue, 10*time.Minute, func(r *ledger.Record) bool {
			return r.State == ledger.InReview && (r.PullHead != old || roundFailed(r)) ||
				slices.Contains([]ledger.State{ledger.AwaitingApproval, ledger.Failed, ledger.Stopped, ledger.Error, ledger.Done}, r.State)
		})
		switch {
		case !ok:
			w.t.Errorf("%s#%d: no pull request (head other than %.7q) within 10 minutes: %s", o.repo, o.issue, old, stateOf(r))
			return nil
		case r.State == ledger.InReview && r.PullHead == old:
			// The item waits in review, saying why: the week's doing when the round's run
			// met the full cache, a broken promise otherwise.
			a := r.CurrentAttempt()
			report := w.t.Errorf
			if w.metFullCache(o) {
				report = w.t.Logf
			}
			report("%s#%d: its %s round ended %s without a new head: %s", o.repo, o.issue, a.Stage, a.Outcome, stateOf(r))
			return nil
		case r.State == ledger.AwaitingApproval && asked < 3:
			// The approval lapsed before the run got its credentials (another item's
			// merge moved the base branch): the status comment asks again, and so does the
			// maintainer.
			asked++
			w.t.Logf("%s#%d asks for approval again: %s", o.repo, o.issue, stateOf(r))
			w.approve(o, "/approve "+w.sealer.ShortID(r.TextRevision()), false)
		case r.State == ledger.Failed && !retried && old == "":
			retried = true
			w.t.Logf("%s#%d failed, the maintainer retries: %s", o.repo, o.issue, stateOf(r))
			w.retry(o)
		case r.State != ledger.InReview:
			w.t.Logf("%s#%d ended %s", o.repo, o.issue, stateOf(r))
			return nil
		default:
			return r
		}
	}
}
