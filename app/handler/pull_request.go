package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// PullRequest handles `pull_request` for Bumper's work branches: opened, synchronize,
// closed.
type PullRequest struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *PullRequest) Handles() []string { return []string{"pull_request"} }

// Handle implements githubapp.EventHandler.
func (h *PullRequest) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.PullRequestEvent
	if err := parse(payload, &ev, "pull_request"); err != nil {
		return err
	}
	switch ev.GetAction() {
	case "opened", "reopened", "synchronize", "closed":
	default:
		return nil
	}
	pr := ev.GetPullRequest()
	if _, _, ok := workitem.WorkBranch(pr.GetHead().GetRef()); !ok {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, _ = githubapp.PreparePRContext(ctx, inst, ev.GetRepo(), ev.GetNumber())
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandlePull(ctx, gh, workitem.PullEvent{Delivery: delivery, Action: ev.GetAction(),
			Repo: repoOf(ev.GetRepo()), Number: ev.GetNumber(), HeadRef: pr.GetHead().GetRef(),
			HeadRepo: pr.GetHead().GetRepo().GetFullName(), Author: pr.GetUser().GetLogin(),
			Merged: pr.GetMerged(), Sender: ev.GetSender().GetLogin(), After: ev.GetAfter()})
	})
}
