package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// WorkflowRun handles `workflow_run` for the runs Bumper dispatched: in progress and
// completed move the work item.
type WorkflowRun struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *WorkflowRun) Handles() []string { return []string{"workflow_run"} }

// Handle implements githubapp.EventHandler.
func (h *WorkflowRun) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.WorkflowRunEvent
	if err := parse(payload, &ev, "workflow_run"); err != nil {
		return err
	}
	run := ev.GetWorkflowRun()
	if run.GetEvent() != "workflow_dispatch" {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, ev.GetRepo())
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandleRun(ctx, gh, workitem.RunEvent{Delivery: delivery, Repo: repoOf(ev.GetRepo()),
			RunID: run.GetID(), WorkflowPath: run.GetPath(), Status: run.GetStatus(), Conclusion: run.GetConclusion()})
	})
}
