package rest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/state"
)

func (c *call) pull() (*state.Issue, *state.Pull, error) {
	n, err := strconv.Atoi(c.params["pull_number"])
	if err != nil {
		return nil, nil, apierr.NotFound()
	}
	p := c.repo.Pull(n)
	if p == nil {
		return nil, nil, apierr.NotFound()
	}
	return c.repo.Issue(n), p, nil
}

func (a *API) listPulls(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	st, err := stateFilter(r, "PullRequest")
	if err != nil {
		apierr.Write(w, err)
		return
	}
	head := q.Get("head")
	if _, b, ok := strings.Cut(head, ":"); ok {
		head = b
	}
	var list []*state.Pull
	for _, p := range c.repo.Pulls() {
		is := c.repo.Issue(p.Number)
		if st != "all" && is.State != st {
			continue
		}
		if head != "" && p.Head != head {
			continue
		}
		if b := q.Get("base"); b != "" && p.Base != b {
			continue
		}
		list = append(list, p)
	}
	if q.Get("direction") != "asc" {
		slices.Reverse(list)
	}
	for _, p := range list {
		a.conv.Refresh(r.Context(), c.st, c.repo, p)
	}
	writeList(c, w, r, list, func(p *state.Pull) obj { return c.rn.Pull(c.repo, c.repo.Issue(p.Number), p) })
}

func (a *API) createPull(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Title               *string `json:"title"`
		Body                string  `json:"body"`
		Head                string  `json:"head"`
		Base                string  `json:"base"`
		Draft               bool    `json:"draft"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		apierr.Write(w, apierr.Validation("PullRequest", "title", "missing_field", ""))
		return
	}
	head := req.Head
	if owner, b, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, c.repo.Owner) {
			apierr.Write(w, apierr.Validation("PullRequest", "head", "invalid", "pull requests from forks are not emulated"))
			return
		}
		head = b
	}
	refs, err := a.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	headSHA, ok := refs["refs/heads/"+head]
	if !ok || head == "" {
		apierr.Write(w, apierr.Validation("PullRequest", "head", "invalid", ""))
		return
	}
	baseSHA, ok := refs["refs/heads/"+req.Base]
	if !ok || req.Base == "" {
		apierr.Write(w, apierr.Validation("PullRequest", "base", "invalid", ""))
		return
	}
	if headSHA == baseSHA {
		apierr.Write(w, apierr.Validation("PullRequest", "", "custom", "No commits between "+req.Base+" and "+head))
		return
	}
	for _, p := range c.repo.Pulls() {
		if p.Head == head && p.Base == req.Base && c.repo.Issue(p.Number).State == "open" {
			apierr.Write(w, apierr.Validation("PullRequest", "", "custom", "A pull request already exists for "+c.repo.Owner+":"+head+"."))
			return
		}
	}
	now := c.st.Timestamp()
	is := &state.Issue{ID: c.st.NextID(), Title: *req.Title, Body: req.Body,
		User: c.who.actor(), State: "open", CreatedAt: now, UpdatedAt: now, Labels: []string{},
		Assignees: []string{}, IsPull: true}
	c.repo.AddIssue(is)
	p := &state.Pull{Number: is.Number, Head: head, Base: req.Base, HeadSHA: headSHA, BaseSHA: baseSHA,
		Draft: req.Draft, MaintainerMod: req.MaintainerCanModify == nil || *req.MaintainerCanModify}
	c.repo.AddPull(p)
	// GitHub answers, and announces, a new pull request before its background job
	// computed the mergeability: null, "unknown". The emulator computes it at once
	// after, so the next GET has it.
	rendered := c.rn.PullComputing(c.repo, is, p)
	a.conv.Opened(r.Context(), c.st, c.repo, is, p, c.who.actor())
	apierr.WriteJSON(w, http.StatusCreated, rendered)
}

func (a *API) getPull(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	a.conv.Refresh(r.Context(), c.st, c.repo, p)
	apierr.WriteJSON(w, http.StatusOK, c.rn.Pull(c.repo, is, p))
}

func (a *API) editPull(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req fieldsEdit
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if err := req.check("PullRequest"); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.State != nil && *req.State == "open" && p.Merged {
		apierr.Write(w, apierr.Validation("PullRequest", "state", "invalid", "a merged pull request cannot be reopened"))
		return
	}
	req.StateReason = nil // pull requests have no state reason
	changes, action := c.applyFields(is, &req)
	rendered := c.rn.Pull(c.repo, is, p)
	if len(changes) > 0 {
		c.emit("pull_request", "edited", c.repo, c.who.actor(), obj{"number": p.Number, "pull_request": rendered, "changes": changes})
	}
	if action == "reopened" {
		// Reopening starts GitHub's mergeability job again: the webhook goes without it.
		c.emit("pull_request", action, c.repo, c.who.actor(), obj{"number": p.Number, "pull_request": c.rn.PullComputing(c.repo, is, p)})
		a.conv.Refresh(r.Context(), c.st, c.repo, p)
		rendered = c.rn.Pull(c.repo, is, p)
	} else if action != "" {
		c.emit("pull_request", action, c.repo, c.who.actor(), obj{"number": p.Number, "pull_request": rendered})
	}
	apierr.WriteJSON(w, http.StatusOK, rendered)
}

func (a *API) checkMerged(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if !p.Merged {
		// GitHub's description gives this 404 no body.
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mergePull serves PUT …/pulls/{n}/merge: a real merge commit on the base branch,
// after branch protection (conversation.Merge).
func (a *API) mergePull(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if err := apierr.DecodeOptional(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	sha, err := a.conv.Merge(r.Context(), c.st, c.repo, is, p, c.actorOf(), conversation.MergeRequest{
		Title: req.CommitTitle, Message: req.CommitMessage, SHA: req.SHA, Method: req.MergeMethod})
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, obj{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}

// updateBranch serves PUT …/pulls/{n}/update-branch {expected_head_sha}: the base
// merged into the head branch (conversation.UpdateBranch), answered 202 as GitHub
// answers, once the commit is made. An App needs contents write besides pull requests
// write, as GitHub's description says.
func (a *API) updateBranch(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if c.who.token != nil && !state.LevelAtLeast(c.who.token.Permissions["contents"], "write") {
		apierr.Write(w, apierr.NotAccessible())
		return
	}
	var req struct {
		ExpectedHeadSHA string `json:"expected_head_sha"`
	}
	if err := apierr.DecodeOptional(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if _, err := a.conv.UpdateBranch(r.Context(), c.st, c.repo, is, p, c.actorOf(), req.ExpectedHeadSHA); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusAccepted, obj{"message": "Updating pull request branch.",
		"url": c.st.BaseURL() + "/repos/" + c.repo.FullName() + "/pulls/" + strconv.Itoa(p.Number)})
}
