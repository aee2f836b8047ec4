package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// WorkflowJob handles `workflow_job`: it names the runner that picked the run up, which
// the record keeps. The run's end is taken from workflow_run.
type WorkflowJob struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *WorkflowJob) Handles() []string { return []string{"workflow_job"} }

// Handle implements githubapp.EventHandler.
func (h *WorkflowJob) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.WorkflowJobEvent
	if err := parse(payload, &ev, "workflow_job"); err != nil {
		return err
	}
	job := ev.GetWorkflowJob()
	if ev.GetAction() != "in_progress" || job.GetRunnerName() == "" {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, ev.GetRepo())
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandleRun(ctx, gh, workitem.RunEvent{Delivery: delivery, Repo: repoOf(ev.GetRepo()),
			RunID: job.GetRunID(), Status: job.GetStatus(), Runner: job.GetRunnerName()})
	})
}
