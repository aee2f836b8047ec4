package ghemu

import "net/http"

// registerRoutes is the emulator's whole REST surface, one line a route. docs/emulator.md's
// route table is this list; every route validates against GitHub's OpenAPI description.
// Order matters only where templates overlap: literal segments are registered first.
func (e *Emulator) registerRoutes() {
	rt := &e.routes
	const (
		get, post, patch, put, del = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete
	)
	app := need{auth: authApp}
	inst := need{auth: authInstall}
	any := need{auth: authAny}
	meta := need{auth: authRepo, level: "read", userLevel: "read"}
	issuesR := need{auth: authRepo, perm: "issues", level: "read", userLevel: "read"}
	// Readers may open issues and comment on GitHub; labels need triage.
	issuesComment := need{auth: authRepo, perm: "issues", level: "write", userLevel: "read"}
	issuesTriage := need{auth: authRepo, perm: "issues", level: "write", userLevel: "triage"}
	contentsR := need{auth: authRepo, perm: "contents", level: "read", userLevel: "read"}
	contentsW := need{auth: authRepo, perm: "contents", level: "write", userLevel: "write"}
	pullsR := need{auth: authRepo, perm: "pull_requests", level: "read", userLevel: "read"}
	pullsW := need{auth: authRepo, perm: "pull_requests", level: "write", userLevel: "read"}
	pullsMerge := need{auth: authRepo, perm: "contents", level: "write", userLevel: "write"}
	checksR := need{auth: authRepo, perm: "checks", level: "read", userLevel: "read"}
	// Check runs are Apps' alone: a person's token is refused whatever their role.
	checksW := need{auth: authRepo, perm: "checks", level: "write", userLevel: "write", appOnly: true}
	actionsR := need{auth: authRepo, perm: "actions", level: "read", userLevel: "read"}
	actionsW := need{auth: authRepo, perm: "actions", level: "write", userLevel: "write"}
	adminR := need{auth: authRepo, perm: "administration", level: "read", userLevel: "admin"}
	statusesR := need{auth: authRepo, perm: "statuses", level: "read", userLevel: "read"}
	statusesW := need{auth: authRepo, perm: "statuses", level: "write", userLevel: "write"}

	// The App and its installations.
	rt.add(get, "/app", app, e.getApp)
	rt.add(get, "/app/installations", app, e.listInstallations)
	rt.add(get, "/app/installations/{installation_id}", app, e.getInstallation)
	rt.add(post, "/app/installations/{installation_id}/access_tokens", app, e.createInstallationToken)
	rt.add(get, "/repos/{owner}/{repo}/installation", app, e.getRepoInstallation)
	rt.add(get, "/app/hook/deliveries", app, e.listDeliveries)
	rt.add(get, "/app/hook/deliveries/{delivery_id}", app, e.getDelivery)
	rt.add(post, "/app/hook/deliveries/{delivery_id}/attempts", app, e.redeliver)
	rt.add(get, "/installation/repositories", inst, e.listInstallationRepos)
	rt.add(del, "/installation/token", inst, e.revokeInstallationToken)
	rt.add(get, "/rate_limit", any, e.getRateLimit)
	rt.add(post, "/app-manifests/{code}/conversions", need{auth: authNone}, e.convertManifest)

	// Accounts.
	rt.add(get, "/users/{username}", need{auth: authNone}, e.getUser)

	// Repositories, branches, collaborators, contents.
	rt.add(get, "/repos/{owner}/{repo}", meta, e.getRepo)
	rt.add(get, "/repos/{owner}/{repo}/branches/{branch}/protection", adminR, e.getBranchProtection)
	rt.add(get, "/repos/{owner}/{repo}/branches/{branch}", meta, e.getBranch)
	rt.add(get, "/repos/{owner}/{repo}/collaborators/{username}/permission", meta, e.getCollaboratorPermission)
	rt.add(get, "/repos/{owner}/{repo}/contents/{path...}", contentsR, e.getContents)
	rt.add(get, "/repos/{owner}/{repo}/commits/{ref...}/check-runs", checksR, e.listCheckRunsForRef)
	rt.add(get, "/repos/{owner}/{repo}/commits/{ref...}/status", statusesR, e.getCombinedStatus)
	rt.add(get, "/repos/{owner}/{repo}/commits/{ref...}", contentsR, e.getCommit)

	// Issues, labels, comments.
	rt.add(get, "/repos/{owner}/{repo}/issues/comments/{comment_id}", issuesR, e.getComment)
	rt.add(patch, "/repos/{owner}/{repo}/issues/comments/{comment_id}", issuesComment, e.editComment)
	rt.add(del, "/repos/{owner}/{repo}/issues/comments/{comment_id}", issuesComment, e.deleteComment)
	rt.add(get, "/repos/{owner}/{repo}/issues", issuesR, e.listIssues)
	rt.add(post, "/repos/{owner}/{repo}/issues", issuesComment, e.createIssue)
	rt.add(get, "/repos/{owner}/{repo}/issues/{issue_number}", issuesR, e.getIssue)
	rt.add(patch, "/repos/{owner}/{repo}/issues/{issue_number}", issuesComment, e.editIssue)
	rt.add(get, "/repos/{owner}/{repo}/issues/{issue_number}/comments", issuesR, e.listComments)
	rt.add(post, "/repos/{owner}/{repo}/issues/{issue_number}/comments", issuesComment, e.createComment)
	rt.add(get, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesR, e.listIssueLabels)
	rt.add(post, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesTriage, e.addIssueLabels)
	rt.add(put, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesTriage, e.setIssueLabels)
	rt.add(del, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesTriage, e.clearIssueLabels)
	rt.add(del, "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", issuesTriage, e.removeIssueLabel)
	rt.add(get, "/repos/{owner}/{repo}/labels", issuesR, e.listLabels)
	rt.add(post, "/repos/{owner}/{repo}/labels", issuesTriage, e.createLabel)
	rt.add(get, "/repos/{owner}/{repo}/labels/{name}", issuesR, e.getLabel)

	// Pull requests and reviews.
	rt.add(get, "/repos/{owner}/{repo}/pulls", pullsR, e.listPulls)
	rt.add(post, "/repos/{owner}/{repo}/pulls", pullsW, e.createPull)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}", pullsR, e.getPull)
	rt.add(patch, "/repos/{owner}/{repo}/pulls/{pull_number}", pullsW, e.editPull)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/merge", pullsR, e.checkMerged)
	rt.add(put, "/repos/{owner}/{repo}/pulls/{pull_number}/merge", pullsMerge, e.mergePull)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", pullsR, e.listReviews)
	rt.add(post, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", pullsW, e.createReview)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", pullsR, e.listReviewComments)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/comments", pullsR, e.listPullComments)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/files", pullsR, e.listPullFiles)

	// Check runs.
	rt.add(post, "/repos/{owner}/{repo}/check-runs", checksW, e.createCheckRun)
	rt.add(get, "/repos/{owner}/{repo}/check-runs/{check_run_id}", checksR, e.getCheckRun)
	rt.add(patch, "/repos/{owner}/{repo}/check-runs/{check_run_id}", checksW, e.updateCheckRun)

	// Commit statuses.
	rt.add(post, "/repos/{owner}/{repo}/statuses/{sha}", statusesW, e.createStatus)

	// Git references.
	rt.add(get, "/repos/{owner}/{repo}/git/ref/{ref...}", contentsR, e.getRef)
	rt.add(get, "/repos/{owner}/{repo}/git/matching-refs/{ref...}", contentsR, e.listMatchingRefs)
	rt.add(post, "/repos/{owner}/{repo}/git/refs", contentsW, e.createRef)
	rt.add(patch, "/repos/{owner}/{repo}/git/refs/{ref...}", contentsW, e.updateRef)
	rt.add(del, "/repos/{owner}/{repo}/git/refs/{ref...}", contentsW, e.deleteRef)

	// Actions: workflow dispatch and the runs it creates.
	rt.add(post, "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", actionsW, e.dispatchWorkflow)
	rt.add(get, "/repos/{owner}/{repo}/actions/runs", actionsR, e.listRuns)
	rt.add(get, "/repos/{owner}/{repo}/actions/runs/{run_id}", actionsR, e.getRun)
	rt.add(get, "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", actionsR, e.listRunJobs)
	rt.add(post, "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", actionsW, e.cancelRun)
	rt.add(get, "/repos/{owner}/{repo}/actions/jobs/{job_id}", actionsR, e.getJob)
	rt.add(get, "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", actionsR, e.downloadJobLogs)
}

// Routes lists the emulated REST routes as "METHOD /template", in registration order.
func (e *Emulator) Routes() []string {
	out := make([]string, 0, len(e.routes.routes))
	for _, r := range e.routes.routes {
		out = append(out, r.method+" "+r.template)
	}
	return out
}
