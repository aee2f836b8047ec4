package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/internal/textcut"
)

// ErrNotTheRunsPull: the pull request a fix run was given is not one it may publish
// on (not the App's, another branch, from a fork, closed, or its head is not what the
// run pushed).
var ErrNotTheRunsPull = errors.New("the pull request is not the run's")

// ExistingPullOptions names the pull request a fix run found its branch in, and what
// it must be.
type ExistingPullOptions struct {
	// Repository is owner/name; Number the pull request (the exchange's).
	Repository string
	Number     int
	// Branch is its head branch, bumper/<issue>-<n> of Issue; Head the commit the run
	// just pushed there.
	Branch string
	Issue  int
	Head   string
	// BotLogin is the App's bot: only a pull request it opened is the run's.
	BotLogin string
	// Wait bounds how long the pull request's head may take to show the push (GitHub
	// updates it shortly after); 0: 10 s.
	Wait time.Duration
}

// ExistingPull reads the pull request a fix run pushed to and checks it is the run's:
// open, opened by the App, from the repository itself (not a fork), on Branch, and
// with the pushed commit as its head. Anything else is ErrNotTheRunsPull: the run
// comments on and checks nothing that is not its own.
func ExistingPull(ctx context.Context, gh *github.Client, o ExistingPullOptions) (*PullRequest, error) {
	owner, name, err := splitRepo(o.Repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if _, ok := workspace.BranchAttempt(o.Branch, o.Issue); !ok || o.Number < 1 || !workspace.IsCommitID(o.Head) || gh == nil {
		return nil, fmt.Errorf("%w: pull request #%d, branch %q, head %q", ErrInvalidOptions, o.Number, o.Branch, o.Head)
	}
	wait := o.Wait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		pr, _, err := gh.PullRequests.Get(ctx, owner, name, o.Number)
		if err != nil {
			return nil, fmt.Errorf("failed to read pull request #%d: %w", o.Number, err)
		}
		bad := func(why string) (*PullRequest, error) {
			return nil, fmt.Errorf("%w: #%d %s; nothing is posted on it", ErrNotTheRunsPull, o.Number, why)
		}
		switch {
		case !strings.EqualFold(pr.GetUser().GetLogin(), o.BotLogin):
			return bad("was opened by " + pr.GetUser().GetLogin() + ", not the App")
		case !strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), o.Repository):
			return bad("comes from " + pr.GetHead().GetRepo().GetFullName())
		case pr.GetHead().GetRef() != o.Branch:
			return bad("is from " + pr.GetHead().GetRef() + ", not " + o.Branch)
		case pr.GetState() != "open":
			return bad("is " + pr.GetState())
		case pr.GetHead().GetSHA() == o.Head:
			return &PullRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), HeadSHA: o.Head}, nil
		case time.Now().After(deadline):
			return bad(fmt.Sprintf("has head %s, not the pushed %s", pr.GetHead().GetSHA(), o.Head))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// CommentEvidence posts a fix round's evidence on the pull request as a comment (the
// pull request's body keeps the run that opened it): a line of the runner's own, then
// evidencemd.Render within GitHub's comment limit. It returns the comment's URL.
func CommentEvidence(ctx context.Context, gh *github.Client, repository string, number int, intro string, ev *evidence.Evidence) (string, error) {
	owner, name, err := splitRepo(repository)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if ev == nil || gh == nil || number < 1 {
		return "", fmt.Errorf("%w: no evidence, client or pull request", ErrInvalidOptions)
	}
	head := strings.TrimSpace(strings.ToValidUTF8(intro, "\uFFFD"))
	if len(head) > MaxSummary {
		head = textcut.Bytes(head, MaxSummary)
	}
	head += "\n\n"
	md, _ := evidencemd.Render(ev, evidencemd.CommentLimit-len(head))
	c, _, err := gh.Issues.CreateComment(ctx, owner, name, number, &github.IssueComment{Body: github.String(head + md)})
	if err != nil {
		return "", fmt.Errorf("failed to comment the evidence on pull request #%d: %w", number, err)
	}
	return c.GetHTMLURL(), nil
}
