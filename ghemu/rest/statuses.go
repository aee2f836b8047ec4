package rest

import (
	"net/http"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
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

func (a *API) createStatus(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		State       *string `json:"state"`
		TargetURL   *string `json:"target_url"`
		Description *string `json:"description"`
		Context     *string `json:"context"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	sha := c.params["sha"]
	if !a.commitExists(r.Context(), c.repo, sha) {
		apierr.Write(w, apierr.Unprocessable("No commit found for SHA: "+sha))
		return
	}
	if req.State == nil {
		apierr.Write(w, apierr.Validation("Status", "state", "missing_field", "state is required"))
		return
	}
	if !statusStates[*req.State] {
		apierr.Write(w, apierr.Validation("Status", "state", "invalid", "state must be error, failure, pending or success"))
		return
	}
	st := &state.CommitStatus{ID: c.st.NextID(), SHA: sha, State: *req.State, Context: "default",
		Creator: c.who.actor(), CreatedAt: c.st.Timestamp()}
	st.UpdatedAt = st.CreatedAt
	if req.Context != nil && *req.Context != "" {
		st.Context = *req.Context
	}
	if req.Description != nil {
		if len(*req.Description) > maxStatusDescription {
			apierr.Write(w, apierr.Validation("Status", "description", "custom", "description is too long (maximum is 140 characters)"))
			return
		}
		st.Description = *req.Description
	}
	if req.TargetURL != nil {
		st.TargetURL = *req.TargetURL
	}
	n := 0
	for _, old := range c.repo.StatusesOn(sha) {
		if strings.EqualFold(old.Context, st.Context) {
			n++
		}
	}
	if n >= maxStatusesPerContext {
		apierr.Write(w, apierr.Validation("Status", "context", "custom", "This SHA and context has reached the maximum number of statuses."))
		return
	}
	c.repo.AddStatus(st)
	o := renderStatus(c.st.BaseURL(), c.repo, st)
	o["creator"] = c.rn.User(st.Creator)
	apierr.WriteJSON(w, http.StatusCreated, o)
}

// renderStatus renders a status as the combined status lists it (simple-commit-status);
// the create response adds its creator.
func renderStatus(base string, rp *state.Repo, st *state.CommitStatus) obj {
	return obj{
		"url": base + "/repos/" + rp.FullName() + "/statuses/" + st.SHA, "avatar_url": base + "/avatars/" + st.Creator,
		"id": st.ID, "node_id": render.NodeID("SC", st.ID), "state": st.State, "context": st.Context,
		"description": render.NilIfEmpty(st.Description), "target_url": render.NilIfEmpty(st.TargetURL),
		"created_at": render.TS(st.CreatedAt), "updated_at": render.TS(st.UpdatedAt),
	}
}

// getCombinedStatus serves GET /repos/{o}/{r}/commits/{ref}/status: the latest status
// of each context and their combined state (failure if any failed or errored, pending
// if any is pending or there are none, success otherwise).
func (a *API) getCombinedStatus(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := a.resolveRef(r.Context(), c.repo, c.params["ref"])
	if !ok {
		apierr.Write(w, apierr.New(http.StatusNotFound, "No commit found for SHA: "+c.params["ref"]))
		return
	}
	list := c.repo.LatestStatuses(sha)
	combined := "success"
	if len(list) == 0 {
		combined = "pending"
	}
	for _, st := range list {
		switch {
		case st.State == "failure" || st.State == "error":
			combined = "failure"
		case st.State == "pending" && combined != "failure":
			combined = "pending"
		}
	}
	out, err := pageOf(c, w, r, list, func(st *state.CommitStatus) obj { return renderStatus(c.st.BaseURL(), c.repo, st) })
	if err != nil {
		apierr.Write(w, err)
		return
	}
	api := c.st.BaseURL() + "/repos/" + c.repo.FullName() + "/commits/" + sha
	apierr.WriteJSON(w, http.StatusOK, obj{
		"state": combined, "statuses": out, "sha": sha, "total_count": len(list),
		"repository": c.rn.Repo(c.repo), "commit_url": api, "url": api + "/status",
	})
}
