package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

const (
	labelTrigger = "agent:implement"
	botLogin     = ghemu.DefaultAppSlug + "[bot]"
	// stateWait bounds the wait for serve to answer a comment or a label.
	stateWait = time.Minute
	// dispatchWait bounds the wait for serve to dispatch a run: a review run, a round.
	dispatchWait = 2 * time.Minute
)

func (d *demo) openAndLabel(ctx context.Context, s *step) (string, error) {
	c := d.client(ghemu.DefaultMaintainer)
	is, _, err := c.Issues.Create(ctx, d.owner, d.repo, &gogithub.IssueRequest{Title: &d.issue.Title, Body: &d.issue.Body})
	if err != nil {
		return "", fmt.Errorf("failed to open the issue: %w", err)
	}
	d.issueNum = is.GetNumber()
	if _, _, err := c.Issues.AddLabelsToIssue(ctx, d.owner, d.repo, d.issueNum, []string{labelTrigger}); err != nil {
		return "", fmt.Errorf("failed to label the issue: %w", err)
	}
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	if err := d.waitState(ctx, "bumper:"+string(ledger.AwaitingApproval), stateWait); err != nil {
		return "", err
	}
	status, _, err := d.botComments(ctx, d.issueNum)
	if err != nil {
		return "", err
	}
	d.pending = append([]string{"Bumper's status comment:"}, indent(excerpt(statusText(status), 4))...)
	return fmt.Sprintf("issue #%d %q is bumper:awaiting-approval", d.issueNum, d.issue.Title), nil
}

func (d *demo) readerApproves(ctx context.Context, s *step) (string, error) {
	_, before, err := d.botComments(ctx, d.issueNum)
	if err != nil {
		return "", err
	}
	body := "/approve"
	if _, _, err := d.client(ghemu.DefaultReader).Issues.CreateComment(ctx, d.owner, d.repo, d.issueNum, &gogithub.IssueComment{Body: &body}); err != nil {
		return "", fmt.Errorf("failed to comment as the reader: %w", err)
	}
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	_, after, err := d.botComments(ctx, d.issueNum)
	if err != nil {
		return "", err
	}
	if len(after) <= len(before) {
		return "", errors.New("the App did not answer the reader's /approve")
	}
	st, err := d.state(ctx)
	if err != nil {
		return "", err
	}
	if st != "bumper:"+string(ledger.AwaitingApproval) {
		return "", fmt.Errorf("after the reader's /approve the issue is %q, want it still awaiting approval", st)
	}
	runs, err := d.e.Runs(d.owner, d.repo)
	if err != nil {
		return "", fmt.Errorf("failed to list the workflow runs: %w", err)
	}
	if len(runs) != 0 {
		return "", fmt.Errorf("the reader's /approve dispatched %d runs, want none", len(runs))
	}
	d.pending = append([]string{"Bumper's reply:"}, indent(excerpt(after[len(after)-1], 2))...)
	return "refused (read permission); nothing dispatched", nil
}

func (d *demo) maintainerApproves(ctx context.Context, s *step) (string, error) {
	body := "/approve"
	if _, _, err := d.client(ghemu.DefaultMaintainer).Issues.CreateComment(ctx, d.owner, d.repo, d.issueNum, &gogithub.IssueComment{Body: &body}); err != nil {
		return "", fmt.Errorf("failed to comment as the maintainer: %w", err)
	}
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	runs, err := d.e.Runs(d.owner, d.repo)
	if err != nil {
		return "", fmt.Errorf("failed to list the workflow runs: %w", err)
	}
	if len(runs) != 1 {
		return "", fmt.Errorf("%d workflow runs after the maintainer's /approve, want 1: %s", len(runs), d.statusSummary(ctx))
	}
	d.implRun = &runs[0]
	return fmt.Sprintf("workflow run %d dispatched (%s, stage %s)", runs[0].ID, runs[0].WorkflowPath, runs[0].Inputs["stage"]), nil
}

func (d *demo) implement(ctx context.Context, s *step) (string, error) {
	start := time.Now()
	if err := d.waitRun(ctx, s, d.implRun); err != nil {
		return "", err
	}
	return fmt.Sprintf("workflow run %d succeeded in %s", d.implRun.ID, time.Since(start).Round(time.Second)), nil
}

func (d *demo) pullRequest(ctx context.Context, s *step) (string, error) {
	c := d.client(ghemu.DefaultMaintainer)
	prs, _, err := c.PullRequests.List(ctx, d.owner, d.repo, &gogithub.PullRequestListOptions{State: "open"})
	if err != nil {
		return "", fmt.Errorf("failed to list the pull requests: %w", err)
	}
	if len(prs) != 1 {
		return "", fmt.Errorf("%d open pull requests after the run, want 1: %s", len(prs), d.statusSummary(ctx))
	}
	d.pull = prs[0]
	d.pullURL = prs[0].GetHTMLURL()
	files, _, err := c.PullRequests.ListFiles(ctx, d.owner, d.repo, d.pull.GetNumber(), nil)
	if err != nil {
		return "", fmt.Errorf("failed to list the pull request's files: %w", err)
	}
	var changed []string
	for _, f := range files {
		changed = append(changed, fmt.Sprintf("%s (+%d -%d)", f.GetFilename(), f.GetAdditions(), f.GetDeletions()))
	}
	d.pending = []string{
		fmt.Sprintf("%s → %s, by %s: %s", d.pull.GetHead().GetRef(), d.pull.GetBase().GetRef(), d.pull.GetUser().GetLogin(), strings.Join(changed, ", ")),
	}
	if checks, err := d.checks(ctx); err == nil && checks != "" {
		d.pending = append(d.pending, "checks: "+checks)
	}
	return fmt.Sprintf("#%d %q", d.pull.GetNumber(), d.pull.GetTitle()), nil
}

func (d *demo) review(ctx context.Context, s *step) (string, error) {
	if d.reviewerOff {
		return "the reviewer is off in " + policyPath + " (reviewer: false)", nil
	}
	run, err := d.waitDispatch(ctx, s, wire.StageReview, "the review run", nil)
	if err != nil {
		return "", err
	}
	d.reviewRun = run
	return d.awaitVerdict(ctx, s, run)
}

// waitDispatch waits for serve to dispatch a run of the stage, other than those seen,
// and returns it.
func (d *demo) waitDispatch(ctx context.Context, s *step, stage wire.Stage, what string, seen map[int64]bool) (*ghemu.RunInfo, error) {
	deadline := time.Now().Add(dispatchWait)
	for {
		runs, err := d.e.Runs(d.owner, d.repo)
		if err != nil {
			return nil, fmt.Errorf("failed to list the workflow runs: %w", err)
		}
		for i := range runs {
			if runs[i].Inputs["stage"] == string(stage) && !seen[runs[i].ID] {
				return &runs[i], nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("serve dispatched no %s within %v: %s", what, dispatchWait, d.statusSummary(ctx))
		}
		s.update("waiting for serve to dispatch " + what)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitVerdict waits for a review run and finds its result on the pull request's head:
// the App's review and the bumper/verdict check.
func (d *demo) awaitVerdict(ctx context.Context, s *step, run *ghemu.RunInfo) (string, error) {
	if err := d.waitRun(ctx, s, run); err != nil {
		return "", err
	}
	if err := d.refreshPull(ctx); err != nil {
		return "", err
	}
	head := d.pull.GetHead().GetSHA()
	c := d.client(ghemu.DefaultMaintainer)
	reviews, _, err := c.PullRequests.ListReviews(ctx, d.owner, d.repo, d.pull.GetNumber(), &gogithub.ListOptions{PerPage: 100})
	if err != nil {
		return "", fmt.Errorf("failed to list the pull request's reviews: %w", err)
	}
	var review *gogithub.PullRequestReview
	for _, r := range reviews {
		// The App's replies in threads are reviews too (GitHub makes one, without a body,
		// for each): the verdict is the one with a body.
		if r.GetUser().GetLogin() == botLogin && r.GetCommitID() == head && r.GetBody() != "" {
			review = r
		}
	}
	if review == nil {
		return "", fmt.Errorf("the review run succeeded but no review by %s is on #%d's head %.12s: %s", botLogin, d.pull.GetNumber(), head, d.statusSummary(ctx))
	}
	checks, err := d.checks(ctx)
	if err != nil {
		return "", err
	}
	if !strings.Contains(checks, "bumper/verdict ") {
		return "", fmt.Errorf("no bumper/verdict check run on the pull request's head %.12s (its checks: %s)", head, checks)
	}
	d.pending = append([]string{"the review (" + review.GetState() + "):"}, indent(excerpt(review.GetBody(), 3))...)
	d.pending = append(d.pending, "checks on "+fmt.Sprintf("%.12s", head)+": "+checks)
	return fmt.Sprintf("workflow run %d: a %s review on #%d", run.ID, review.GetState(), d.pull.GetNumber()), nil
}

func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  " + l
	}
	return out
}
