package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

func (c *call) pull() (*issue, *pull, error) {
	n, err := strconv.Atoi(c.params["pull_number"])
	if err != nil {
		return nil, nil, errNotFound()
	}
	p := c.repo.Pulls[n]
	if p == nil {
		return nil, nil, errNotFound()
	}
	return c.repo.Issues[n], p, nil
}

// renderPullRef renders a pull request's head or base. Both are branches of the same
// repository, so the caller renders that repository once (repoObj) for the two.
func renderPullRef(rp *repo, repoObj obj, branch, sha string) obj {
	return obj{"label": rp.Owner + ":" + branch, "ref": branch, "sha": sha,
		"user": repoObj["owner"], "repo": repoObj}
}

// pullMergeState computes mergeable and mergeable_state the way GitHub reports them:
// "unknown" once merged or closed, "blocked" when branch protection is not yet
// satisfied, "clean" otherwise.
func (e *Emulator) pullMergeState(rp *repo, is *issue, p *pull) (any, string) {
	if p.Merged || is.State == "closed" {
		return nil, "unknown"
	}
	if e.protectionUnmet(rp, p, nil) != "" {
		return true, "blocked"
	}
	return true, "clean"
}

// protectionUnmet says why branch protection on the base forbids who to merge, or "".
// who may be nil: then no bypass applies (mergeable_state is the same for everyone).
func (e *Emulator) protectionUnmet(rp *repo, p *pull, who *principal) string {
	prot := rp.Protected[p.Base]
	if prot == nil {
		return ""
	}
	for _, name := range prot.RequiredChecks {
		if !e.checkPassed(rp, prot, p.HeadSHA, name) {
			return "Required status check \"" + name + "\" is expected."
		}
	}
	if prot.RequiredReviews > 0 && !e.bypassesReviews(prot, who) {
		approvals := map[string]bool{}
		latest := map[string]string{}
		var ids []int64
		for id, rv := range rp.Reviews {
			if rv.PullNumber == p.Number {
				ids = append(ids, id)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			rv := rp.Reviews[id]
			if rv.State == "APPROVED" || rv.State == "CHANGES_REQUESTED" || rv.State == "DISMISSED" {
				latest[key(rv.User)] = rv.State
			}
		}
		for u, st := range latest {
			if st == "CHANGES_REQUESTED" {
				return "Changes requested by " + u + "."
			}
			if st == "APPROVED" {
				approvals[u] = true
			}
		}
		if len(approvals) < prot.RequiredReviews {
			return "At least " + strconv.Itoa(prot.RequiredReviews) + " approving review is required by reviewers with write access."
		}
	}
	return ""
}

// checkPassed reports whether a required check is met on sha, as GitHub decides: a
// check pinned to an App by the latest check run of that name that App created; an
// unpinned one by the latest check run of that name from anyone, or else by the latest
// commit status of that context (contexts are case-insensitive). Who may post a status
// or create a check run is wide (any writer, any App with checks: write), so only a pin
// ties a check to its author.
func (e *Emulator) checkPassed(rp *repo, prot *protection, sha, name string) bool {
	appID, pinned := prot.CheckApps[name]
	var best *checkRun
	for _, cr := range rp.CheckRuns {
		if cr.HeadSHA != sha || cr.Name != name || pinned && cr.AppID != appID {
			continue
		}
		if best == nil || cr.ID > best.ID {
			best = cr
		}
	}
	if best != nil {
		return best.Status == "completed" &&
			(best.Conclusion == "success" || best.Conclusion == "neutral" || best.Conclusion == "skipped")
	}
	if pinned {
		return false
	}
	st := latestStatus(rp, sha, name)
	return st != nil && st.State == "success"
}

func (e *Emulator) renderPull(rp *repo, is *issue, p *pull) obj {
	num := strconv.Itoa(p.Number)
	api := e.baseURL + "/repos/" + rp.fullName() + "/pulls/" + num
	issueAPI := e.baseURL + "/repos/" + rp.fullName() + "/issues/" + num
	html := e.baseURL + "/" + rp.fullName() + "/pull/" + num
	href := func(u string) obj { return obj{"href": u} }
	mergeable, mstate := e.pullMergeState(rp, is, p)
	repoObj := e.renderRepo(rp)
	reviewComments := len(e.visibleReviewComments(rp, p.Number, 0))
	o := e.renderIssue(rp, is)
	delete(o, "pull_request")
	delete(o, "reactions")
	delete(o, "timeline_url")
	delete(o, "performed_via_github_app")
	delete(o, "state_reason")
	delete(o, "repository_url")
	delete(o, "labels_url")
	delete(o, "events_url")
	delete(o, "closed_by")
	extra := obj{
		"url": api, "html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch",
		"issue_url": issueAPI, "commits_url": api + "/commits",
		"review_comments_url": api + "/comments",
		"review_comment_url":  e.baseURL + "/repos/" + rp.fullName() + "/pulls/comments{/number}",
		"comments_url":        issueAPI + "/comments",
		"statuses_url":        e.baseURL + "/repos/" + rp.fullName() + "/statuses/" + p.HeadSHA,
		"head":                renderPullRef(rp, repoObj, p.Head, p.HeadSHA),
		"base":                renderPullRef(rp, repoObj, p.Base, p.BaseSHA),
		"_links": obj{"self": href(api), "html": href(html), "issue": href(issueAPI),
			"comments": href(issueAPI + "/comments"), "review_comments": href(api + "/comments"),
			"review_comment": href(e.baseURL + "/repos/" + rp.fullName() + "/pulls/comments{/number}"),
			"commits":        href(api + "/commits"),
			"statuses":       href(e.baseURL + "/repos/" + rp.fullName() + "/statuses/" + p.HeadSHA)},
		"merged": p.Merged, "merged_at": tsPtr(p.MergedAt), "merged_by": e.renderUserOrNil(p.MergedBy),
		"merge_commit_sha": nilIfEmpty(p.MergeCommitSHA), "mergeable": mergeable,
		"mergeable_state": mstate, "rebaseable": mergeable, "draft": p.Draft,
		"maintainer_can_modify": p.MaintainerMod, "auto_merge": nil,
		"requested_reviewers": []obj{}, "requested_teams": []obj{},
		"comments": is.Comments, "review_comments": reviewComments,
		"commits": 1, "additions": 0, "deletions": 0, "changed_files": 0,
		"node_id": nodeID("PR", is.ID),
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func (e *Emulator) listPulls(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	state, err := stateFilter(r, "PullRequest")
	if err != nil {
		writeError(w, err)
		return
	}
	head := q.Get("head")
	if _, b, ok := strings.Cut(head, ":"); ok {
		head = b
	}
	var nums []int
	for n, p := range c.repo.Pulls {
		is := c.repo.Issues[n]
		if state != "all" && is.State != state {
			continue
		}
		if head != "" && p.Head != head {
			continue
		}
		if b := q.Get("base"); b != "" && p.Base != b {
			continue
		}
		nums = append(nums, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(nums)))
	if q.Get("direction") == "asc" {
		sort.Ints(nums)
	}
	writeList(e, w, r, nums, func(n int) obj { return e.renderPull(c.repo, c.repo.Issues[n], c.repo.Pulls[n]) })
}

func (e *Emulator) createPull(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Title               *string `json:"title"`
		Body                string  `json:"body"`
		Head                string  `json:"head"`
		Base                string  `json:"base"`
		Draft               bool    `json:"draft"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		writeError(w, errValidation("PullRequest", "title", "missing_field", ""))
		return
	}
	head := req.Head
	if owner, b, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, c.repo.Owner) {
			writeError(w, errValidation("PullRequest", "head", "invalid", "pull requests from forks are not emulated"))
			return
		}
		head = b
	}
	refs, err := e.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	headSHA, ok := refs["refs/heads/"+head]
	if !ok || head == "" {
		writeError(w, errValidation("PullRequest", "head", "invalid", ""))
		return
	}
	baseSHA, ok := refs["refs/heads/"+req.Base]
	if !ok || req.Base == "" {
		writeError(w, errValidation("PullRequest", "base", "invalid", ""))
		return
	}
	if headSHA == baseSHA {
		writeError(w, errValidation("PullRequest", "", "custom", "No commits between "+req.Base+" and "+head))
		return
	}
	for n, p := range c.repo.Pulls {
		if p.Head == head && p.Base == req.Base && c.repo.Issues[n].State == "open" {
			writeError(w, errValidation("PullRequest", "", "custom", "A pull request already exists for "+c.repo.Owner+":"+head+"."))
			return
		}
	}
	now := e.timestamp()
	is := &issue{ID: e.st.nextID(), Number: c.repo.NextNumber, Title: *req.Title, Body: req.Body,
		User: c.who.actor(), State: "open", CreatedAt: now, UpdatedAt: now, Labels: []string{},
		Assignees: []string{}, IsPull: true}
	p := &pull{Number: is.Number, Head: head, Base: req.Base, HeadSHA: headSHA, BaseSHA: baseSHA,
		Draft: req.Draft, MaintainerMod: req.MaintainerCanModify == nil || *req.MaintainerCanModify}
	c.repo.NextNumber++
	c.repo.Issues[is.Number] = is
	c.repo.Pulls[is.Number] = p
	c.mutated = true
	rendered := e.renderPull(c.repo, is, p)
	e.emit("pull_request", "opened", c.repo, c.who.actor(), obj{"number": p.Number, "pull_request": rendered})
	writeJSON(w, http.StatusCreated, rendered)
}

func (e *Emulator) getPull(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderPull(c.repo, is, p))
}

func (e *Emulator) editPull(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	var req fieldsEdit
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := req.check("PullRequest"); err != nil {
		writeError(w, err)
		return
	}
	if req.State != nil && *req.State == "open" && p.Merged {
		writeError(w, errValidation("PullRequest", "state", "invalid", "a merged pull request cannot be reopened"))
		return
	}
	req.StateReason = nil // pull requests have no state reason
	changes, action := e.applyFields(c, is, &req)
	rendered := e.renderPull(c.repo, is, p)
	if len(changes) > 0 {
		e.emit("pull_request", "edited", c.repo, c.who.actor(), obj{"number": p.Number, "pull_request": rendered, "changes": changes})
	}
	if action != "" {
		e.emit("pull_request", action, c.repo, c.who.actor(), obj{"number": p.Number, "pull_request": rendered})
	}
	writeJSON(w, http.StatusOK, rendered)
}

func (e *Emulator) checkMerged(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	if !p.Merged {
		writeError(w, errNotFound())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mergePull merges with a real merge commit on the base branch, after checking branch
// protection (required checks on the head commit, approving reviews).
func (e *Emulator) mergePull(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if err := decodeOptional(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if p.Merged || is.State != "open" {
		writeError(w, newError(http.StatusMethodNotAllowed, "Pull Request is not mergeable"))
		return
	}
	if req.MergeMethod != "" && req.MergeMethod != "merge" {
		writeError(w, errValidation("PullRequest", "merge_method", "invalid", "only the merge method is emulated"))
		return
	}
	if req.SHA != "" && req.SHA != p.HeadSHA {
		writeError(w, newError(http.StatusConflict, "Head branch was modified. Review and try the merge again."))
		return
	}
	// An admin's own credential overrides protection unless it enforces admins, as on
	// GitHub; an installation token is never an admin.
	adminOverride := c.who.token == nil && roleAtLeast(e.roleOf(c.who.user, c.repo), "admin") &&
		(c.repo.Protected[p.Base] == nil || !c.repo.Protected[p.Base].EnforceAdmins)
	if why := e.protectionUnmet(c.repo, p, c.who); why != "" && !adminOverride {
		writeError(w, newError(http.StatusMethodNotAllowed, why))
		return
	}
	title := req.CommitTitle
	if title == "" {
		title = "Merge pull request #" + strconv.Itoa(p.Number) + " from " + c.repo.Owner + "/" + p.Head
	}
	msg := title
	if req.CommitMessage != "" {
		msg += "\n\n" + req.CommitMessage
	}
	actor := c.who.actor()
	sig := e.signature(actor)
	sha, err := e.git.Merge(r.Context(), c.repo.Owner, c.repo.Name, p.Base, p.HeadSHA, msg, sig)
	if err != nil {
		writeError(w, newError(http.StatusMethodNotAllowed, "Pull Request is not mergeable: "+err.Error()))
		return
	}
	now := e.timestamp()
	p.Merged, p.MergedAt, p.MergedBy, p.MergeCommitSHA = true, &now, actor, sha
	is.State, is.ClosedAt, is.UpdatedAt = "closed", &now, now
	c.repo.PushedAt = now
	c.mutated = true
	e.emit("pull_request", "closed", c.repo, actor, obj{"number": p.Number, "pull_request": e.renderPull(c.repo, is, p)})
	if err := e.closeReferencedIssues(r.Context(), c.repo, is, p, actor, sha); err != nil {
		// The merge stands, as GitHub's would; only the closing of issues is lost.
		e.log.Error().Err(err).Int("pull", p.Number).Msg("failed to read the merge's closing keywords")
	}
	writeJSON(w, http.StatusOK, obj{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}
