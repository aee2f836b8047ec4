package rest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

func (c *call) issue() (*state.Issue, error) {
	n, err := strconv.Atoi(c.params["issue_number"])
	if err != nil {
		return nil, apierr.NotFound()
	}
	is := c.repo.Issue(n)
	if is == nil {
		return nil, apierr.NotFound()
	}
	return is, nil
}

func (a *API) listIssues(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	st, err := stateFilter(r, "Issue")
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var wantLabels []string
	if s := q.Get("labels"); s != "" {
		for _, l := range strings.Split(s, ",") {
			wantLabels = append(wantLabels, state.Key(strings.TrimSpace(l)))
		}
	}
	since, err := sinceFilter(r, "Issue")
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var list []*state.Issue
	for _, is := range c.repo.Issues() {
		if st != "all" && is.State != st {
			continue
		}
		if cr := q.Get("creator"); cr != "" && !strings.EqualFold(cr, is.User) {
			continue
		}
		if !since.IsZero() && is.UpdatedAt.Before(since) {
			continue
		}
		ok := true
		for _, l := range wantLabels {
			if !is.HasLabel(l) {
				ok = false
			}
		}
		if ok {
			list = append(list, is)
		}
	}
	sortKey := q.Get("sort")
	asc := q.Get("direction") == "asc"
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		var less bool
		switch sortKey {
		case "updated":
			less = a.UpdatedAt.Before(b.UpdatedAt) || a.UpdatedAt.Equal(b.UpdatedAt) && a.Number < b.Number
		case "comments":
			less = a.Comments < b.Comments || a.Comments == b.Comments && a.Number < b.Number
		default:
			less = a.Number < b.Number
		}
		if asc {
			return less
		}
		return !less
	})
	writeList(c, w, r, list, func(is *state.Issue) obj { return c.rn.Issue(c.repo, is) })
}

func (a *API) getIssue(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Issue(c.repo, is))
}

// createIssue opens an issue. Labels it names that the repository lacks are created,
// as GitHub does for callers allowed to label.
func (a *API) createIssue(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Title     *string  `json:"title"`
		Body      string   `json:"body"`
		Labels    []string `json:"labels"`
		Assignees []string `json:"assignees"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		apierr.Write(w, apierr.Validation("Issue", "title", "missing_field", "title is required"))
		return
	}
	if !c.mayTriage() {
		// GitHub silently drops what a caller without triage access may not set.
		req.Labels, req.Assignees = nil, nil
	}
	assignees := []string{}
	for _, as := range req.Assignees {
		u := c.st.User(as)
		if u == nil {
			apierr.Write(w, apierr.Validation("Issue", "assignees", "invalid", as+" is not a user"))
			return
		}
		assignees = append(assignees, u.Login)
	}
	for _, l := range req.Labels {
		if strings.TrimSpace(l) == "" {
			apierr.Write(w, apierr.Validation("Issue", "labels", "invalid", "label names cannot be blank"))
			return
		}
	}
	now := c.st.Timestamp()
	is := &state.Issue{ID: c.st.NextID(), Title: *req.Title, Body: req.Body,
		User: c.who.actor(), State: "open", CreatedAt: now, UpdatedAt: now,
		Labels: labelKeys(c.st, c.repo, req.Labels), Assignees: assignees}
	c.repo.AddIssue(is)
	rendered := c.rn.Issue(c.repo, is)
	c.emit("issues", "opened", c.repo, c.who.actor(), obj{"issue": rendered})
	apierr.WriteJSON(w, http.StatusCreated, rendered)
}

// ensureLabel creates a repository label on first use, as GitHub does when an issue is
// given a label name the repository does not have yet.
func ensureLabel(st *state.World, rp *state.Repo, name string) *state.Label {
	if l := rp.Label(name); l != nil {
		return l
	}
	l := &state.Label{ID: st.NextID(), Name: name, Color: defaultLabelColor}
	rp.AddLabel(l)
	return l
}

func (a *API) editIssue(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		fieldsEdit
		Labels *[]string `json:"labels"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	// Readers may edit only their own issues, and never their labels.
	if !c.mayTriage() {
		if state.Key(is.User) != state.Key(c.who.actor()) {
			apierr.Write(w, apierr.New(http.StatusForbidden, "Must have triage access to edit another user's issue."))
			return
		}
		req.Labels = nil
	}
	if err := req.check("Issue"); err != nil {
		apierr.Write(w, err)
		return
	}
	changes, action := c.applyFields(is, &req.fieldsEdit)
	if len(changes) > 0 {
		c.emit("issues", "edited", c.repo, c.who.actor(), obj{"issue": c.rn.Issue(c.repo, is), "changes": changes})
	}
	if req.Labels != nil {
		c.replaceLabels(is, labelKeys(c.st, c.repo, *req.Labels))
	}
	if action != "" {
		c.emitIssueEvent(is, action, c.who.actor(), obj{})
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Issue(c.repo, is))
}

// fieldsEdit is the part of an edit that issues and pull requests share.
type fieldsEdit struct {
	Title       *string `json:"title"`
	Body        *string `json:"body"`
	State       *string `json:"state"`
	StateReason *string `json:"state_reason"`
}

// check refuses an edit before anything changes, so a refused edit leaves the issue or
// pull request as it was.
func (ed *fieldsEdit) check(resource string) error {
	if ed.Title != nil && strings.TrimSpace(*ed.Title) == "" {
		return apierr.Validation(resource, "title", "missing_field", "title cannot be blank")
	}
	if ed.State != nil && *ed.State != "open" && *ed.State != "closed" {
		return apierr.Validation(resource, "state", "invalid", "state must be open or closed")
	}
	return nil
}

// applyFields changes the issue's title, body and state, and returns the webhook
// "changes" and the state action ("closed", "reopened" or "").
func (c *call) applyFields(is *state.Issue, ed *fieldsEdit) (obj, string) {
	changes := obj{}
	if ed.Title != nil && *ed.Title != is.Title {
		changes["title"] = obj{"from": is.Title}
		is.Title = *ed.Title
	}
	if ed.Body != nil && *ed.Body != is.Body {
		changes["body"] = obj{"from": is.Body}
		is.Body = *ed.Body
	}
	action := ""
	if ed.State != nil && *ed.State != is.State {
		now := c.st.Timestamp()
		if *ed.State == "closed" {
			is.State, is.ClosedAt, is.ClosedBy, action = "closed", &now, c.who.actor(), "closed"
			is.StateReason = "completed"
			if ed.StateReason != nil {
				is.StateReason = *ed.StateReason
			}
		} else {
			is.State, is.ClosedAt, is.ClosedBy, is.StateReason, action = "open", nil, "", "reopened", "reopened"
		}
	}
	is.UpdatedAt = c.st.Timestamp()
	c.st.MarkChanged()
	return changes, action
}

// emitIssueEvent sends an issue's webhook, or the pull_request one when the issue is a
// pull request, as GitHub does for labels and state changes made through the issues API.
func (c *call) emitIssueEvent(is *state.Issue, action, sender string, extra obj) {
	rp := c.repo
	body := obj{}
	for k, v := range extra {
		body[k] = v
	}
	if p := rp.Pull(is.Number); is.IsPull && p != nil {
		body["number"] = is.Number
		body["pull_request"] = c.rn.Pull(rp, is, p)
		c.emit("pull_request", action, rp, sender, body)
		return
	}
	body["issue"] = c.rn.Issue(rp, is)
	c.emit("issues", action, rp, sender, body)
}

// mayTriage reports whether the caller may label and assign: the App (its route check
// already required issues write) or a user with triage access or more.
func (c *call) mayTriage() bool {
	return c.who.token != nil || state.RoleAtLeast(c.repo.Role(c.who.user), "triage")
}
