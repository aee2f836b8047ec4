package ghemu

import (
	"context"
	"strconv"
)

// renderMinimalRepo is the repository summary embedded in workflow runs.
func (e *Emulator) renderMinimalRepo(rp *repo) obj {
	full := e.renderRepo(rp)
	keep := []string{"id", "node_id", "name", "full_name", "owner", "private", "html_url",
		"description", "fork", "url"}
	o := obj{}
	for _, k := range keep {
		o[k] = full[k]
	}
	for k, v := range full {
		if len(k) > 4 && k[len(k)-4:] == "_url" && k != "html_url" && k != "git_url" &&
			k != "ssh_url" && k != "clone_url" && k != "svn_url" && k != "mirror_url" {
			o[k] = v
		}
	}
	return o
}

func (e *Emulator) renderRun(rp *repo, run *workflowRun) obj {
	id := strconv.FormatInt(run.ID, 10)
	api := e.baseURL + "/repos/" + rp.fullName() + "/actions/runs/" + id
	ci, err := e.commit(context.Background(), rp, run.HeadSHA)
	headCommit := obj{"id": run.HeadSHA, "tree_id": "", "message": "", "timestamp": ts(run.CreatedAt),
		"author": obj{"name": "", "email": ""}, "committer": obj{"name": "", "email": ""}}
	if err == nil {
		headCommit = obj{"id": ci.SHA, "tree_id": ci.Tree, "message": ci.Message, "timestamp": ts(ci.Committer.When),
			"author":    obj{"name": ci.Author.Name, "email": ci.Author.Email},
			"committer": obj{"name": ci.Committer.Name, "email": ci.Committer.Email}}
	}
	suite := run.ID + 1
	minimalRepo := e.renderMinimalRepo(rp) // the run's repository is also its head repository
	return obj{
		"id": run.ID, "name": run.WorkflowName, "node_id": nodeID("WFR", run.ID),
		"head_branch": run.Ref, "head_sha": run.HeadSHA, "path": run.WorkflowPath,
		"display_title": run.WorkflowName, "run_number": run.Number, "event": run.Event,
		"status": run.Status, "conclusion": nilIfEmpty(run.Conclusion), "workflow_id": run.WorkflowID,
		"check_suite_id": suite, "check_suite_node_id": nodeID("CS", suite),
		"url": api, "html_url": e.baseURL + "/" + rp.fullName() + "/actions/runs/" + id,
		"pull_requests": []obj{}, "created_at": ts(run.CreatedAt), "updated_at": ts(run.UpdatedAt),
		"actor": e.renderUser(run.Actor), "triggering_actor": e.renderUser(run.Actor),
		"run_attempt": 1, "referenced_workflows": []obj{}, "run_started_at": ts(run.StartedAt),
		"jobs_url": api + "/jobs", "logs_url": api + "/logs",
		"check_suite_url":      e.baseURL + "/repos/" + rp.fullName() + "/check-suites/" + strconv.FormatInt(suite, 10),
		"artifacts_url":        api + "/artifacts",
		"cancel_url":           api + "/cancel",
		"rerun_url":            api + "/rerun",
		"previous_attempt_url": nil,
		"workflow_url":         e.baseURL + "/repos/" + rp.fullName() + "/actions/workflows/" + strconv.FormatInt(run.WorkflowID, 10),
		"head_commit":          headCommit,
		"repository":           minimalRepo,
		"head_repository":      minimalRepo,
	}
}

func (e *Emulator) renderJob(rp *repo, run *workflowRun) obj {
	jobAPI := e.baseURL + "/repos/" + rp.fullName() + "/actions/jobs/" + strconv.FormatInt(run.JobID, 10)
	runAPI := e.baseURL + "/repos/" + rp.fullName() + "/actions/runs/" + strconv.FormatInt(run.ID, 10)
	var completed any
	if run.Status == "completed" {
		completed = ts(run.UpdatedAt)
	}
	var runnerID, groupID any
	var runnerName, groupName any
	if run.RunnerName != "" {
		runnerID, groupID, runnerName, groupName = 1, 1, run.RunnerName, "Default"
	}
	return obj{
		"id": run.JobID, "run_id": run.ID, "run_url": runAPI, "run_attempt": 1,
		"node_id": nodeID("CR", run.JobID), "head_sha": run.HeadSHA, "head_branch": run.Ref,
		"url": jobAPI, "html_url": e.baseURL + "/" + rp.fullName() + "/actions/runs/" +
			strconv.FormatInt(run.ID, 10) + "/job/" + strconv.FormatInt(run.JobID, 10),
		"status": run.Status, "conclusion": nilIfEmpty(run.Conclusion),
		"created_at": ts(run.CreatedAt), "started_at": ts(run.StartedAt), "completed_at": completed,
		"name": run.jobName(), "steps": []obj{}, "check_run_url": e.baseURL + "/repos/" + rp.fullName() +
			"/check-runs/" + strconv.FormatInt(run.JobID, 10),
		"labels": []string{"self-hosted", "bumper"}, "runner_id": runnerID, "runner_name": runnerName,
		"runner_group_id": groupID, "runner_group_name": groupName, "workflow_name": run.WorkflowName,
	}
}

func (e *Emulator) renderWorkflow(rp *repo, run *workflowRun) obj {
	id := strconv.FormatInt(run.WorkflowID, 10)
	return obj{"id": run.WorkflowID, "node_id": nodeID("W", run.WorkflowID), "name": run.WorkflowName,
		"path": run.WorkflowPath, "state": "active", "created_at": ts(rp.CreatedAt), "updated_at": ts(rp.UpdatedAt),
		"url":       e.baseURL + "/repos/" + rp.fullName() + "/actions/workflows/" + id,
		"html_url":  e.baseURL + "/" + rp.fullName() + "/blob/" + run.Ref + "/" + run.WorkflowPath,
		"badge_url": e.baseURL + "/" + rp.fullName() + "/workflows/" + run.WorkflowName + "/badge.svg"}
}
