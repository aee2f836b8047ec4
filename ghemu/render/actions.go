package render

import (
	"cmp"
	"context"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/state"
)

// MinimalRepo is the repository summary embedded in workflow runs.
func (r *Renderer) MinimalRepo(rp *state.Repo) Obj {
	full := r.Repo(rp)
	keep := []string{"id", "node_id", "name", "full_name", "owner", "private", "html_url",
		"description", "fork", "url"}
	o := Obj{}
	for _, k := range keep {
		o[k] = full[k]
	}
	for k, v := range full {
		if strings.HasSuffix(k, "_url") && k != "html_url" && k != "git_url" &&
			k != "ssh_url" && k != "clone_url" && k != "svn_url" && k != "mirror_url" {
			o[k] = v
		}
	}
	return o
}

// Run renders a workflow run. Its head commit comes from git, through the commit cache.
func (r *Renderer) Run(rp *state.Repo, run *state.WorkflowRun) Obj {
	id := strconv.FormatInt(run.ID, 10)
	api := r.base + "/repos/" + rp.FullName() + "/actions/runs/" + id
	headCommit := Obj{"id": run.HeadSHA, "tree_id": "", "message": "", "timestamp": TS(run.CreatedAt),
		"author": Obj{"name": "", "email": ""}, "committer": Obj{"name": "", "email": ""}}
	if r.commits != nil {
		if ci, err := r.commits.Get(context.Background(), rp, run.HeadSHA); err == nil {
			headCommit = Obj{"id": ci.SHA, "tree_id": ci.Tree, "message": ci.Message, "timestamp": TS(ci.Committer.When),
				"author":    Obj{"name": ci.Author.Name, "email": ci.Author.Email},
				"committer": Obj{"name": ci.Committer.Name, "email": ci.Committer.Email}}
		}
	}
	suite := run.ID + 1
	minimalRepo := r.MinimalRepo(rp) // the run's repository is also its head repository
	return Obj{
		"id": run.ID, "name": run.WorkflowName, "node_id": NodeID("WFR", run.ID),
		"head_branch": run.Ref, "head_sha": run.HeadSHA, "path": run.WorkflowPath,
		"display_title": cmp.Or(run.Title, run.WorkflowName), "run_number": run.Number, "event": run.Event,
		"status": run.Status, "conclusion": NilIfEmpty(run.Conclusion), "workflow_id": run.WorkflowID,
		"check_suite_id": suite, "check_suite_node_id": NodeID("CS", suite),
		"url": api, "html_url": r.base + "/" + rp.FullName() + "/actions/runs/" + id,
		"pull_requests": []Obj{}, "created_at": TS(run.CreatedAt), "updated_at": TS(run.UpdatedAt),
		"actor": r.User(run.Actor), "triggering_actor": r.User(run.Actor),
		"run_attempt": 1, "referenced_workflows": []Obj{}, "run_started_at": TS(run.StartedAt),
		"jobs_url": api + "/jobs", "logs_url": api + "/logs",
		"check_suite_url":      r.base + "/repos/" + rp.FullName() + "/check-suites/" + strconv.FormatInt(suite, 10),
		"artifacts_url":        api + "/artifacts",
		"cancel_url":           api + "/cancel",
		"rerun_url":            api + "/rerun",
		"previous_attempt_url": nil,
		"workflow_url":         r.base + "/repos/" + rp.FullName() + "/actions/workflows/" + strconv.FormatInt(run.WorkflowID, 10),
		"head_commit":          headCommit,
		"repository":           minimalRepo,
		"head_repository":      minimalRepo,
	}
}

// Job renders a workflow run's (only) job.
func (r *Renderer) Job(rp *state.Repo, run *state.WorkflowRun) Obj {
	jobAPI := r.base + "/repos/" + rp.FullName() + "/actions/jobs/" + strconv.FormatInt(run.JobID, 10)
	runAPI := r.base + "/repos/" + rp.FullName() + "/actions/runs/" + strconv.FormatInt(run.ID, 10)
	var completed any
	if run.Status == "completed" {
		completed = TS(run.UpdatedAt)
	}
	var runnerID, groupID any
	var runnerName, groupName any
	if run.RunnerName != "" {
		runnerID, groupID, runnerName, groupName = 1, 1, run.RunnerName, "Default"
	}
	return Obj{
		"id": run.JobID, "run_id": run.ID, "run_url": runAPI, "run_attempt": 1,
		"node_id": NodeID("CR", run.JobID), "head_sha": run.HeadSHA, "head_branch": run.Ref,
		"url": jobAPI, "html_url": r.base + "/" + rp.FullName() + "/actions/runs/" +
			strconv.FormatInt(run.ID, 10) + "/job/" + strconv.FormatInt(run.JobID, 10),
		"status": run.Status, "conclusion": NilIfEmpty(run.Conclusion),
		"created_at": TS(run.CreatedAt), "started_at": TS(run.StartedAt), "completed_at": completed,
		"name": run.JobName(), "steps": []Obj{}, "check_run_url": r.base + "/repos/" + rp.FullName() +
			"/check-runs/" + strconv.FormatInt(run.JobID, 10),
		"labels": []string{"self-hosted", "bumper"}, "runner_id": runnerID, "runner_name": runnerName,
		"runner_group_id": groupID, "runner_group_name": groupName, "workflow_name": run.WorkflowName,
	}
}

// Workflow renders the workflow a run belongs to.
func (r *Renderer) Workflow(rp *state.Repo, run *state.WorkflowRun) Obj {
	id := strconv.FormatInt(run.WorkflowID, 10)
	return Obj{"id": run.WorkflowID, "node_id": NodeID("W", run.WorkflowID), "name": run.WorkflowName,
		"path": run.WorkflowPath, "state": "active", "created_at": TS(rp.CreatedAt), "updated_at": TS(rp.UpdatedAt),
		"url":       r.base + "/repos/" + rp.FullName() + "/actions/workflows/" + id,
		"html_url":  r.base + "/" + rp.FullName() + "/blob/" + run.Ref + "/" + run.WorkflowPath,
		"badge_url": r.base + "/" + rp.FullName() + "/workflows/" + run.WorkflowName + "/badge.svg"}
}
