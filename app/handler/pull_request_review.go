package handler

import (
	"context"
	"strings"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/ghclient"
	"github.com/bumperdev/bumper/app/workitem"
)

// PullRequestReview handles `pull_request_review` on Bumper's work branches: a
// submitted review may start a revise round. GitHub sends it for every review, a
// single inline comment and a reply in a thread included, so the App needs no
// pull_request_review_comment subscription: the review's comments are read with it.
type PullRequestReview struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *PullRequestReview) Handles() []string { return []string{"pull_request_review"} }

// Handle implements githubapp.EventHandler.
func (h *PullRequestReview) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.PullRequestReviewEvent
	if err := parse(payload, &ev, "pull_request_review"); err != nil {
		return err
	}
	// submitted: a review round, or an approval that clears bumper/gates; dismissed: the
	// approval that cleared it is gone.
	if a := ev.GetAction(); a != "submitted" && a != "dismissed" {
		return nil
	}
	if _, _, ok := workitem.WorkBranch(ev.GetPullRequest().GetHead().GetRef()); !ok {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, _ = githubapp.PreparePRContext(ctx, inst, ev.GetRepo(), ev.GetPullRequest().GetNumber())
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandleReview(ctx, gh, reviewEventOf(delivery, &ev))
	})
}

// reviewEventOf translates the payload: the review as the REST API shows it (its state
// upper-cased), and the pull request it is of.
func reviewEventOf(delivery string, ev *gogithub.PullRequestReviewEvent) workitem.ReviewEvent {
	rv := ghclient.ReviewOf(ev.GetReview())
	rv.State = strings.ToUpper(rv.State)
	return workitem.ReviewEvent{Delivery: delivery, Action: ev.GetAction(), Repo: repoOf(ev.GetRepo()),
		Number: ev.GetPullRequest().GetNumber(), HeadRef: ev.GetPullRequest().GetHead().GetRef(), Review: rv}
}
