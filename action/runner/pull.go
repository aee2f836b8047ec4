package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
)

// pullRequest is the pull request the run opened, or (a fix run) pushed to.
type pullRequest struct {
	number int
	url    string
}

// openPull opens the pull request as the App (the runner's client holds the run's
// installation token) with the evidence, and the bumper/evidence check run on its head,
// pushed.
func (r *run) openPull(ctx context.Context, pushed string) (*pullRequest, string, error) {
	if reason := r.link.stopped(); reason != "" {
		return nil, "", fmt.Errorf("%w: %s; no pull request was opened", errStopped, reason)
	}
	cfg, g, ev := r.cfg, r.grant, r.rec.ev
	if err := checkEvidence(ctx, ev, cfg.Now().UTC(), "no pull request was opened"); err != nil {
		return nil, "", err
	}
	asPublished(ev, cfg.Now().UTC())
	pr, err := publish.OpenPullRequest(ctx, g.gh, publish.PullRequestOptions{
		Repository: cfg.WorkItem.Repository, Issue: cfg.WorkItem.Issue, Attempt: cfg.Attempt, Base: g.BaseBranch, Title: g.task.Title,
		BotLogin: g.BotLogin, Summary: r.summary(), Evidence: ev,
	})
	if err != nil {
		return nil, "", err
	}
	if pr.HeadSHA != "" && pr.HeadSHA != pushed {
		return nil, "", fmt.Errorf("pull request #%d has head %.12s, not the pushed %.12s", pr.Number, pr.HeadSHA, pushed)
	}
	opened := &pullRequest{number: pr.Number, url: pr.URL}
	ev.PullRequest = pr.Number
	cr, err := publish.EvidenceCheckRun(ctx, g.gh, publish.CheckRunOptions{Repository: cfg.WorkItem.Repository, Head: pushed, Evidence: ev, ServerURL: cfg.ServerURL})
	if err != nil {
		return opened, "", err
	}
	verb := "opened"
	if !pr.Created {
		verb = "found open"
	}
	return opened, fmt.Sprintf("%s #%d; check run %s %s", verb, pr.Number, publish.EvidenceCheckName, cr.Conclusion), nil
}

// updatePull is the publication of a round on the pull request (fix, revise, update):
// the pushed commit is the head of the pull request the App opened on the branch (no
// new one is opened); a revise round's replies are posted in their threads (ws holds
// what the agent left in /out); the round's evidence is commented on the pull request,
// and the bumper/evidence check run written on the new head.
func (r *run) updatePull(ctx context.Context, pushed string, ws *workspace.Workspace) (*pullRequest, string, error) {
	if reason := r.link.stopped(); reason != "" {
		return nil, "", fmt.Errorf("%w: %s; nothing was posted on the pull request", errStopped, reason)
	}
	cfg, g, ev := r.cfg, r.grant, r.rec.ev
	repo := cfg.WorkItem.Repository
	pr, err := publish.ExistingPull(ctx, g.gh, publish.ExistingPullOptions{
		Repository: repo, Number: g.PullRequest, Branch: g.branch, Issue: cfg.WorkItem.Issue, Head: pushed, BotLogin: g.BotLogin,
	})
	if err != nil {
		return nil, "", err
	}
	found := &pullRequest{number: pr.Number, url: pr.URL}
	if err := checkEvidence(ctx, ev, cfg.Now().UTC(), "nothing was posted on the pull request"); err != nil {
		return found, "", err
	}
	replied := ""
	if cfg.Stage == wire.StageRevise {
		if replied, err = r.reply(ctx, pr.Number, pushed, ws); err != nil {
			return found, "", err
		}
		if err := checkEvidence(ctx, ev, cfg.Now().UTC(), "neither the evidence comment nor its check run was posted (the replies were)"); err != nil {
			return found, "", err
		}
	}
	asPublished(ev, cfg.Now().UTC())
	url, err := publish.CommentEvidence(ctx, g.gh, repo, pr.Number, r.summary(), ev)
	if err != nil {
		return found, "", err
	}
	cr, err := publish.EvidenceCheckRun(ctx, g.gh, publish.CheckRunOptions{Repository: repo, Head: pushed, Evidence: ev, ServerURL: cfg.ServerURL})
	if err != nil {
		return found, "", err
	}
	return found, fmt.Sprintf("pushed to #%d%s, evidence commented (%s); check run %s %s", pr.Number, replied, url, publish.EvidenceCheckName, cr.Conclusion), nil
}

// summary is the runner's own paragraph at the top of the pull request, or of a
// round's evidence comment.
func (r *run) summary() string {
	var b strings.Builder
	issue, attempt, tests := r.cfg.WorkItem.Issue, r.cfg.Attempt, r.rec.ev.Tests
	round := 0
	if rd := r.rec.ev.Round; rd != nil {
		round = rd.Number
	}
	switch r.cfg.Stage {
	case wire.StageFix:
		fmt.Fprintf(&b, "Bumper's fix round (attempt %d) for the failing checks of #%d: a commit on top of %.12s", attempt, issue, r.grant.HeadCommit)
	case wire.StageRevise:
		fmt.Fprintf(&b, "Bumper's review round %d (attempt %d) of #%d, answering the writers' review: commits on top of %.12s", round, attempt, issue, r.grant.HeadCommit)
	case wire.StageUpdate:
		fmt.Fprintf(&b, "Bumper's update round %d (attempt %d) of #%d: the base branch's head %.12s merged into %.12s with a merge commit (never a rebase)",
			round, attempt, issue, r.grant.UpdateTo, r.grant.HeadCommit)
	}
	if b.Len() > 0 {
		b.WriteString(", made in a microVM behind a default-deny firewall")
		if n := len(tests); n > 0 {
			fmt.Fprintf(&b, "; the repository's verification passed in round %d", tests[n-1].Round)
		}
		b.WriteString(". The evidence below is this round's.")
		return b.String()
	}
	fmt.Fprintf(&b, "Bumper's agent worked on #%d (attempt %d) in a microVM behind a default-deny firewall", issue, attempt)
	if n := len(tests); n > 0 {
		fmt.Fprintf(&b, "; the repository's verification passed in round %d", tests[n-1].Round)
	}
	b.WriteString(". Review it like any contribution: the evidence below says what ran, what it reached and what it decided where the issue was silent.")
	return b.String()
}
