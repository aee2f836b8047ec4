package rest

import (
	"net/http"
	"strings"
)

// register is the emulator's whole REST surface, one line a route. docs/emulator-rest.md's
// route table is this list; every route validates against GitHub's OpenAPI description.
// Order matters only where templates overlap: literal segments are registered first.
func (a *API) register() {
	rt := &a.routes
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
	// Updating a branch writes to it: pull requests write, and (checked in the route)
	// contents write for an App; a person needs write access.
	pullsUpdate := need{auth: authRepo, perm: "pull_requests", level: "write", userLevel: "write"}
	// Dismissing a review is a writer's (or the App's) decision.
	pullsDismiss := need{auth: authRepo, perm: "pull_requests", level: "write", userLevel: "write"}
	checksR := need{auth: authRepo, perm: "checks", level: "read", userLevel: "read"}
	// Check runs are Apps' alone: a person's token is refused whatever their role.
	checksW := need{auth: authRepo, perm: "checks", level: "write", userLevel: "write", appOnly: true}
	actionsR := need{auth: authRepo, perm: "actions", level: "read", userLevel: "read"}
	actionsW := need{auth: authRepo, perm: "actions", level: "write", userLevel: "write"}
	adminR := need{auth: authRepo, perm: "administration", level: "read", userLevel: "admin"}
	adminW := need{auth: authRepo, perm: "administration", level: "write", userLevel: "admin"}
	statusesR := need{auth: authRepo, perm: "statuses", level: "read", userLevel: "read"}
	statusesW := need{auth: authRepo, perm: "statuses", level: "write", userLevel: "write"}

	// The App and its installations.
	rt.add(get, "/app", app, a.getApp)
	rt.add(get, "/app/installations", app, a.listInstallations)
	rt.add(get, "/app/installations/{installation_id}", app, a.getInstallation)
	rt.add(post, "/app/installations/{installation_id}/access_tokens", app, a.createInstallationToken)
	rt.add(get, "/repos/{owner}/{repo}/installation", app, a.getRepoInstallation)
	rt.add(get, "/orgs/{org}/installation", app, a.getOrgInstallation)
	rt.add(get, "/app/hook/deliveries", app, a.listDeliveries)
	rt.add(get, "/app/hook/deliveries/{delivery_id}", app, a.getDelivery)
	rt.add(post, "/app/hook/deliveries/{delivery_id}/attempts", app, a.redeliver)
	rt.add(get, "/installation/repositories", inst, a.listInstallationRepos)
	rt.add(del, "/installation/token", inst, a.revokeInstallationToken)
	rt.add(get, "/rate_limit", any, a.getRateLimit)
	rt.add(post, "/app-manifests/{code}/conversions", need{auth: authNone}, a.convertManifest)
	rt.add(get, "/meta", need{auth: authNone}, a.getMeta)

	// Accounts.
	rt.add(get, "/users/{username}", need{auth: authNone}, a.getUser)

	// Repositories, branches, collaborators, contents.
	rt.add(get, "/repos/{owner}/{repo}", meta, a.getRepo)
	rt.add(get, "/repos/{owner}/{repo}/branches/{branch}/protection/required_signatures", adminR, a.getRequiredSignatures)
	rt.add(post, "/repos/{owner}/{repo}/branches/{branch}/protection/required_signatures", adminW, a.setRequiredSignatures)
	rt.add(del, "/repos/{owner}/{repo}/branches/{branch}/protection/required_signatures", adminW, a.setRequiredSignatures)
	rt.add(get, "/repos/{owner}/{repo}/branches/{branch}/protection", adminR, a.getBranchProtection)
	rt.add(get, "/repos/{owner}/{repo}/branches/{branch}", meta, a.getBranch)
	rt.add(get, "/repos/{owner}/{repo}/collaborators/{username}/permission", meta, a.getCollaboratorPermission)
	rt.add(get, "/repos/{owner}/{repo}/contents/{path...}", contentsR, a.getContents)
	rt.add(get, "/repos/{owner}/{repo}/commits/{ref...}/check-runs", checksR, a.listCheckRunsForRef)
	rt.add(get, "/repos/{owner}/{repo}/commits/{ref...}/status", statusesR, a.getCombinedStatus)
	rt.add(get, "/repos/{owner}/{repo}/commits/{ref...}", contentsR, a.getCommit)

	// Issues, labels, comments.
	rt.add(get, "/repos/{owner}/{repo}/issues/comments/{comment_id}", issuesR, a.getComment)
	rt.add(patch, "/repos/{owner}/{repo}/issues/comments/{comment_id}", issuesComment, a.editComment)
	rt.add(del, "/repos/{owner}/{repo}/issues/comments/{comment_id}", issuesComment, a.deleteComment)
	rt.add(get, "/repos/{owner}/{repo}/issues", issuesR, a.listIssues)
	rt.add(post, "/repos/{owner}/{repo}/issues", issuesComment, a.createIssue)
	rt.add(get, "/repos/{owner}/{repo}/issues/{issue_number}", issuesR, a.getIssue)
	rt.add(patch, "/repos/{owner}/{repo}/issues/{issue_number}", issuesComment, a.editIssue)
	rt.add(get, "/repos/{owner}/{repo}/issues/{issue_number}/comments", issuesR, a.listComments)
	rt.add(post, "/repos/{owner}/{repo}/issues/{issue_number}/comments", issuesComment, a.createComment)
	rt.add(get, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesR, a.listIssueLabels)
	rt.add(post, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesTriage, a.addIssueLabels)
	rt.add(put, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesTriage, a.setIssueLabels)
	rt.add(del, "/repos/{owner}/{repo}/issues/{issue_number}/labels", issuesTriage, a.clearIssueLabels)
	rt.add(del, "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", issuesTriage, a.removeIssueLabel)
	rt.add(get, "/repos/{owner}/{repo}/labels", issuesR, a.listLabels)
	rt.add(post, "/repos/{owner}/{repo}/labels", issuesTriage, a.createLabel)
	rt.add(get, "/repos/{owner}/{repo}/labels/{name}", issuesR, a.getLabel)

	// Pull requests, reviews, review comments and threads. The literal
	// /pulls/comments routes come before /pulls/{pull_number}.
	rt.add(get, "/repos/{owner}/{repo}/pulls/comments", pullsR, a.listRepoReviewComments)
	rt.add(get, "/repos/{owner}/{repo}/pulls/comments/{comment_id}", pullsR, a.getReviewComment)
	rt.add(patch, "/repos/{owner}/{repo}/pulls/comments/{comment_id}", pullsW, a.editReviewComment)
	rt.add(del, "/repos/{owner}/{repo}/pulls/comments/{comment_id}", pullsW, a.deleteReviewComment)
	rt.add(get, "/repos/{owner}/{repo}/pulls", pullsR, a.listPulls)
	rt.add(post, "/repos/{owner}/{repo}/pulls", pullsW, a.createPull)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}", pullsR, a.getPull)
	rt.add(patch, "/repos/{owner}/{repo}/pulls/{pull_number}", pullsW, a.editPull)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/merge", pullsR, a.checkMerged)
	rt.add(put, "/repos/{owner}/{repo}/pulls/{pull_number}/merge", pullsMerge, a.mergePull)
	rt.add(put, "/repos/{owner}/{repo}/pulls/{pull_number}/update-branch", pullsUpdate, a.updateBranch)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", pullsR, a.listReviews)
	rt.add(post, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", pullsW, a.createReview)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", pullsR, a.getReview)
	rt.add(put, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", pullsW, a.updateReview)
	rt.add(del, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", pullsW, a.deletePendingReview)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", pullsR, a.listReviewComments)
	rt.add(post, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events", pullsW, a.submitReview)
	rt.add(put, "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals", pullsDismiss, a.dismissReview)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/comments", pullsR, a.listPullComments)
	rt.add(post, "/repos/{owner}/{repo}/pulls/{pull_number}/comments", pullsW, a.createPullComment)
	rt.add(post, "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", pullsW, a.createReply)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/files", pullsR, a.listPullFiles)
	rt.add(get, "/repos/{owner}/{repo}/pulls/{pull_number}/commits", pullsR, a.listPullCommits)

	// Check runs.
	rt.add(post, "/repos/{owner}/{repo}/check-runs", checksW, a.createCheckRun)
	rt.add(get, "/repos/{owner}/{repo}/check-runs/{check_run_id}", checksR, a.getCheckRun)
	rt.add(patch, "/repos/{owner}/{repo}/check-runs/{check_run_id}", checksW, a.updateCheckRun)

	// Commit statuses.
	rt.add(post, "/repos/{owner}/{repo}/statuses/{sha}", statusesW, a.createStatus)

	// Git data: blobs, trees and commits (gitdata.go).
	rt.add(post, "/repos/{owner}/{repo}/git/blobs", contentsW, a.createBlob)
	rt.add(post, "/repos/{owner}/{repo}/git/trees", contentsW, a.createTree)
	rt.add(post, "/repos/{owner}/{repo}/git/commits", contentsW, a.createCommit)
	rt.add(get, "/repos/{owner}/{repo}/git/commits/{commit_sha}", contentsR, a.getGitCommit)

	// Git references.
	rt.add(get, "/repos/{owner}/{repo}/git/ref/{ref...}", contentsR, a.getRef)
	rt.add(get, "/repos/{owner}/{repo}/git/matching-refs/{ref...}", contentsR, a.listMatchingRefs)
	rt.add(post, "/repos/{owner}/{repo}/git/refs", contentsW, a.createRef)
	rt.add(patch, "/repos/{owner}/{repo}/git/refs/{ref...}", contentsW, a.updateRef)
	rt.add(del, "/repos/{owner}/{repo}/git/refs/{ref...}", contentsW, a.deleteRef)

	// Actions: workflow dispatch and the runs it creates.
	rt.add(post, "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", actionsW, a.dispatchWorkflow)
	rt.add(get, "/repos/{owner}/{repo}/actions/runs", actionsR, a.listRuns)
	rt.add(get, "/repos/{owner}/{repo}/actions/runs/{run_id}", actionsR, a.getRun)
	rt.add(get, "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs", actionsR, a.listRunJobs)
	rt.add(post, "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", actionsW, a.cancelRun)
	rt.add(get, "/repos/{owner}/{repo}/actions/jobs/{job_id}", actionsR, a.getJob)
	rt.add(get, "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs", actionsR, a.downloadJobLogs)
}

// Routes lists the emulated REST routes as "METHOD /template", in registration order.
func Routes() []string {
	var a API
	a.register()
	out := make([]string, 0, len(a.routes.routes))
	for _, r := range a.routes.routes {
		out = append(out, r.method+" "+r.template)
	}
	return out
}

// SpecPaths are the emulated routes written as GitHub's OpenAPI description writes them,
// for loading just those paths of the description.
func SpecPaths() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range Routes() {
		_, p, _ := strings.Cut(r, " ")
		p = strings.ReplaceAll(p, "...}", "}")
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Tops are the first path segments of the REST routes ("repos", "app", …): the other
// surfaces sharing the emulator's URL space (the web view) leave these to the REST API.
func Tops() map[string]bool {
	tops := map[string]bool{}
	for _, r := range Routes() {
		_, p, _ := strings.Cut(r, " ")
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		tops[top] = true
	}
	return tops
}
