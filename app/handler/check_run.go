package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// CheckRun handles `check_run`: "completed" with a failure on a work item's pull request
// may start a fix round; "rerequested" (Re-run on a Bumper check of a failed work item's
// pull request) asks for a retry, under the same permission rules.
type CheckRun struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *CheckRun) Handles() []string { return []string{"check_run"} }

// Handle implements githubapp.EventHandler.
func (h *CheckRun) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.CheckRunEvent
	if err := parse(payload, &ev, "check_run"); err != nil {
		return err
	}
	if ev.GetAction() != "rerequested" && ev.GetAction() != "completed" {
		return nil
	}
	var prs []int
	for _, pr := range ev.GetCheckRun().PullRequests {
		prs = append(prs, pr.GetNumber())
	}
	if len(prs) == 0 {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, ev.GetRepo())
	if ev.GetAction() == "completed" {
		cr := ev.GetCheckRun()
		return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
			return h.Service.HandleCheck(ctx, gh, workitem.CheckEvent{Delivery: delivery, Repo: repoOf(ev.GetRepo()),
				Name: cr.GetName(), HeadSHA: cr.GetHeadSHA(), Conclusion: cr.GetConclusion(), PullRequests: prs})
		})
	}
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandleCheckRerequest(ctx, gh, workitem.CheckRerequest{Delivery: delivery,
			Repo: repoOf(ev.GetRepo()), PullRequests: prs, Sender: ev.GetSender().GetLogin(),
			SenderType: ev.GetSender().GetType()})
	})
}
