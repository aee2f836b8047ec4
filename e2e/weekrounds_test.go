package e2e

import (
	"context"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

// The week's conversation on the pull request: an edit while a run works, a review
// asking for changes, a conflicting commit on main, and gadgets' CI failing a head.

// notePath is the file the item's agent writes, which only its pull request changes.
func (o *itemOutcome) notePath() string { return "notes/" + o.note + ".md" }

// editWhileWorking has the maintainer edit the issue while its run works: the approval
// no longer holds and the run stops; the maintainer reads the new text, approves its
// revision, and merges what that run makes. The edit also turns the slow agent into the
// one that makes the change.
func (w *week) editWhileWorking(o *itemOutcome, body string) {
	run, ok := w.slowRun(o)
	if !ok {
		return
	}
	before := w.record(o.repo, o.issue)
	edited := strings.Replace(body, "scenario: slow", "scenario: note", 1)
	if _, _, err := w.user(ghemu.DefaultMaintainer).Issues.Edit(w.ctx, ghemu.DefaultOrg, o.repo, o.issue, &gogithub.IssueRequest{Body: &edited}); err != nil {
		w.t.Errorf("%s#%d: editing while its run works: %v", o.repo, o.issue, err)
		return
	}
	r, ok := w.waitFor(o.repo, o.issue, 3*time.Minute, func(r *ledger.Record) bool {
		return r.State == ledger.AwaitingApproval && before != nil && r.SpecRevision != before.SpecRevision
	})
	if !ok {
		w.t.Errorf("%s#%d: an edit while its run worked did not void the approval within 3 minutes: %s", o.repo, o.issue, stateOf(r))
		return
	}
	if !w.runEnds(o.repo, run.ID, 3*time.Minute) {
		w.t.Errorf("%s#%d: run %d, whose approval the edit voided, still runs 3 minutes later", o.repo, o.issue, run.ID)
	}
	w.approve(o, "/approve "+w.sealer.ShortID(r.TextRevision()), false)
	w.pullRequest(o, scenarioMerge)
}

// runEnds waits until a workflow run completed.
func (w *week) runEnds(repo string, id int64, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Second) {
		if run, err := w.e.Run(ghemu.DefaultOrg, repo, id); err == nil && run.Status == "completed" {
			return true
		}
	}
	return false
}

// reviewRound has the maintainer request a change in an inline comment on the item's
// note, and waits for the revise round's head.
func (w *week) reviewRound(o *itemOutcome, r *ledger.Record) *ledger.Record {
	if _, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.CreateReview(w.ctx, ghemu.DefaultOrg, o.repo, r.PullRequest,
		&gogithub.PullRequestReviewRequest{Event: gogithub.String("REQUEST_CHANGES"), Body: gogithub.String("One thing before it goes in."),
			Comments: []*gogithub.DraftReviewComment{inlineOn(o.notePath(), 1, "Say when this was reviewed.")}}); err != nil {
		w.t.Errorf("%s#%d: the maintainer's review of #%d: %v", o.repo, o.issue, r.PullRequest, err)
		return nil
	}
	next := w.awaitPull(o, r.PullHead)
	if next != nil && next.AttemptsOfStage(wire.StageRevise) == 0 {
		w.t.Errorf("%s#%d: the pull request's head moved without a revise round: %s", o.repo, o.issue, stateOf(next))
	}
	return next
}

// conflictRound has a maintainer push to main a note of the same name as the item's:
// the pull request conflicts, and waits for the update round that merges that commit.
// Another item's merge just before can start a round of its own first (serve merges
// the commit each push names), so the rounds are followed until the head holds the push.
func (w *week) conflictRound(o *itemOutcome, r *ledger.Record) *ledger.Record {
	pushed, err := w.e.PushCommit(w.ctx, ghemu.DefaultOrg, o.repo, "main", map[string][]byte{o.notePath(): []byte("Noted on main by a maintainer.\n")},
		"Note "+o.note+" on main", ghemu.DefaultMaintainer)
	if err != nil {
		w.t.Errorf("%s#%d: the conflicting push to main: %v", o.repo, o.issue, err)
		return nil
	}
	for range 3 {
		if r = w.awaitPull(o, r.PullHead); r == nil {
			return nil
		}
		if merged, err := w.e.Git().IsAncestor(w.ctx, ghemu.DefaultOrg, o.repo, pushed, r.PullHead); err == nil && merged {
			if r.AttemptsOfStage(wire.StageUpdate) == 0 {
				w.t.Errorf("%s#%d: main's conflicting commit is in the pull request without an update round: %s", o.repo, o.issue, stateOf(r))
			}
			return r
		}
	}
	w.t.Errorf("%s#%d: three new heads, none of them holding main's conflicting commit %.12s: %s", o.repo, o.issue, pushed, stateOf(r))
	return nil
}

// passCI waits for gadgets' CI on the pull request's head; a failure starts a fix
// round (serve's doing, the check being required), whose head the CI checks again. It
// returns the record once the head passed; nil when the item ended otherwise. Only the
// fix scenario's agent forgets what the CI wants (its round may be over before the
// maintainer looks: the record says so).
func (w *week) passCI(o *itemOutcome, r *ledger.Record, fails bool) *ledger.Record {
	for r != nil {
		conclusion, ok := w.checked(o.repo, r.PullHead, 3*time.Minute)
		fixed := r.AttemptsOfStage(wire.StageFix) > 0
		switch {
		case !ok:
			w.t.Errorf("%s#%d: the CI did not check %.12s within 3 minutes", o.repo, o.issue, r.PullHead)
			return nil
		case conclusion == "success" && fails && !fixed:
			w.t.Errorf("%s#%d: the CI passed the first head of an agent that forgot its changelog entry", o.repo, o.issue)
			return r
		case conclusion == "success":
			return r
		case !fails:
			w.t.Errorf("%s#%d: the CI failed %.12s of an agent that wrote its changelog entry", o.repo, o.issue, r.PullHead)
			return nil
		}
		if r = w.awaitPull(o, r.PullHead); r != nil && r.AttemptsOfStage(wire.StageFix) == 0 {
			w.t.Errorf("%s#%d: the pull request's head moved without a fix round: %s", o.repo, o.issue, stateOf(r))
		}
	}
	return nil
}

// checked waits for the CI's conclusion on head.
func (w *week) checked(repo, head string, limit time.Duration) (string, bool) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Second) {
		w.mu.Lock()
		c, ok := w.ciDone[repo+"@"+head]
		w.mu.Unlock()
		if ok {
			return c, true
		}
	}
	return "", false
}

// runCI is gadgets' CI, another App as on GitHub: it checks every head of every open
// pull request once, as a push triggers it, until ctx ends. Its rule, on what the pull
// request changes: each note it adds under notes/ comes with its entry in changelog.d/.
func (w *week) runCI(ctx context.Context, repo string) {
	ci := w.user(ciBot)
	for ctx.Err() == nil {
		prs, _, err := ci.PullRequests.List(ctx, ghemu.DefaultOrg, repo, &gogithub.PullRequestListOptions{State: "open", ListOptions: gogithub.ListOptions{PerPage: 100}})
		for _, pr := range prs {
			head := pr.GetHead().GetSHA()
			w.mu.Lock()
			_, done := w.ciDone[repo+"@"+head]
			w.mu.Unlock()
			if err != nil || done {
				continue
			}
			conclusion, summary, cerr := changelogRule(ctx, ci, repo, pr.GetNumber())
			if cerr != nil {
				continue // asked again on the next round
			}
			if _, _, cerr := ci.Checks.CreateCheckRun(ctx, ghemu.DefaultOrg, repo, gogithub.CreateCheckRunOptions{
				Name: ciCheck, HeadSHA: head, Status: gogithub.String("completed"), Conclusion: gogithub.String(conclusion),
				Output: &gogithub.CheckRunOutput{Title: gogithub.String("changelog " + conclusion), Summary: gogithub.String(summary)}}); cerr != nil {
				continue
			}
			w.mu.Lock()
			w.ciDone[repo+"@"+head] = conclusion
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// changelogRule is the CI's check of a pull request's files.
func changelogRule(ctx context.Context, ci *gogithub.Client, repo string, pr int) (conclusion, summary string, err error) {
	files, _, err := ci.PullRequests.ListFiles(ctx, ghemu.DefaultOrg, repo, pr, &gogithub.ListOptions{PerPage: 100})
	if err != nil {
		return "", "", err
	}
	changed := map[string]bool{}
	for _, f := range files {
		changed[f.GetFilename()] = true
	}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(changed)) {
		if dir, file := path.Split(name); dir == "notes/" && !changed["changelog.d/"+file] {
			missing = append(missing, "changelog.d/"+file)
		}
	}
	if len(missing) > 0 {
		return "failure", "FAIL: every note needs its entry in changelog.d, and these are missing: " + strings.Join(missing, ", "), nil
	}
	return "success", "Every note has its changelog entry.", nil
}
