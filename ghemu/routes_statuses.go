package ghemu

import (
	"net/http"
	"sort"
	"strings"
)

// Commit statuses: the older, App-less way of reporting on a commit. They matter to
// Bumper because anyone with write access may post one under any context, and GitHub
// lets one satisfy a required check that is not pinned to an App.

var statusStates = map[string]bool{"error": true, "failure": true, "pending": true, "success": true}

// GitHub's limits on a status: its description's length, and statuses per (SHA, context).
const (
	maxStatusDescription  = 140
	maxStatusesPerContext = 1000
)

func (e *Emulator) createStatus(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		State       *string `json:"state"`
		TargetURL   *string `json:"target_url"`
		Description *string `json:"description"`
		Context     *string `json:"context"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	sha := c.params["sha"]
	if _, err := e.commit(r.Context(), c.repo, sha); err != nil || !isSHA(sha) {
		writeError(w, errUnprocessable("No commit found for SHA: "+sha))
		return
	}
	if req.State == nil {
		writeError(w, errValidation("Status", "state", "missing_field", "state is required"))
		return
	}
	if !statusStates[*req.State] {
		writeError(w, errValidation("Status", "state", "invalid", "state must be error, failure, pending or success"))
		return
	}
	st := &commitStatus{ID: e.st.nextID(), SHA: sha, State: *req.State, Context: "default",
		Creator: c.who.actor(), CreatedAt: e.timestamp()}
	st.UpdatedAt = st.CreatedAt
	if req.Context != nil && *req.Context != "" {
		st.Context = *req.Context
	}
	if req.Description != nil {
		if len(*req.Description) > maxStatusDescription {
			writeError(w, errValidation("Status", "description", "custom", "description is too long (maximum is 140 characters)"))
			return
		}
		st.Description = *req.Description
	}
	if req.TargetURL != nil {
		st.TargetURL = *req.TargetURL
	}
	n := 0
	for _, old := range c.repo.Statuses {
		if old.SHA == sha && strings.EqualFold(old.Context, st.Context) {
			n++
		}
	}
	if n >= maxStatusesPerContext {
		writeError(w, errValidation("Status", "context", "custom", "This SHA and context has reached the maximum number of statuses."))
		return
	}
	if c.repo.Statuses == nil {
		c.repo.Statuses = map[int64]*commitStatus{}
	}
	c.repo.Statuses[st.ID] = st
	c.mutated = true
	o := e.renderStatus(c.repo, st)
	o["creator"] = e.renderUser(st.Creator)
	writeJSON(w, http.StatusCreated, o)
}

// renderStatus renders a status as the combined status lists it (simple-commit-status);
// the create response adds its creator.
func (e *Emulator) renderStatus(rp *repo, st *commitStatus) obj {
	return obj{
		"url": e.baseURL + "/repos/" + rp.fullName() + "/statuses/" + st.SHA, "avatar_url": e.baseURL + "/avatars/" + st.Creator,
		"id": st.ID, "node_id": nodeID("SC", st.ID), "state": st.State, "context": st.Context,
		"description": nilIfEmpty(st.Description), "target_url": nilIfEmpty(st.TargetURL),
		"created_at": ts(st.CreatedAt), "updated_at": ts(st.UpdatedAt),
	}
}

// latestStatuses is the newest status of each context on sha (contexts compare
// case-insensitively, as GitHub's do), ordered by context.
func latestStatuses(rp *repo, sha string) []*commitStatus {
	latest := map[string]*commitStatus{}
	for _, st := range rp.Statuses {
		if st.SHA != sha {
			continue
		}
		if old := latest[key(st.Context)]; old == nil || st.ID > old.ID {
			latest[key(st.Context)] = st
		}
	}
	out := make([]*commitStatus, 0, len(latest))
	for _, st := range latest {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i].Context) < key(out[j].Context) })
	return out
}

// latestStatus is the newest status of one context on sha, or nil.
func latestStatus(rp *repo, sha, context string) *commitStatus {
	for _, st := range latestStatuses(rp, sha) {
		if strings.EqualFold(st.Context, context) {
			return st
		}
	}
	return nil
}

// getCombinedStatus serves GET /repos/{o}/{r}/commits/{ref}/status: the latest status
// of each context and their combined state (failure if any failed or errored, pending
// if any is pending or there are none, success otherwise).
func (e *Emulator) getCombinedStatus(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := e.resolveRef(r.Context(), c.repo, c.params["ref"])
	if !ok {
		writeError(w, newError(http.StatusNotFound, "No commit found for SHA: "+c.params["ref"]))
		return
	}
	list := latestStatuses(c.repo, sha)
	state := "success"
	if len(list) == 0 {
		state = "pending"
	}
	for _, st := range list {
		switch {
		case st.State == "failure" || st.State == "error":
			state = "failure"
		case st.State == "pending" && state != "failure":
			state = "pending"
		}
	}
	out, err := pageOf(e, w, r, list, func(st *commitStatus) obj { return e.renderStatus(c.repo, st) })
	if err != nil {
		writeError(w, err)
		return
	}
	api := e.baseURL + "/repos/" + c.repo.fullName() + "/commits/" + sha
	writeJSON(w, http.StatusOK, obj{
		"state": state, "statuses": out, "sha": sha, "total_count": len(list),
		"repository": e.renderRepo(c.repo), "commit_url": api, "url": api + "/status",
	})
}
