package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

func (c *call) issue() (*issue, error) {
	n, err := strconv.Atoi(c.params["issue_number"])
	if err != nil {
		return nil, errNotFound()
	}
	is := c.repo.Issues[n]
	if is == nil {
		return nil, errNotFound()
	}
	return is, nil
}

func (e *Emulator) listIssues(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	state, err := stateFilter(r, "Issue")
	if err != nil {
		writeError(w, err)
		return
	}
	var wantLabels []string
	if s := q.Get("labels"); s != "" {
		for _, l := range strings.Split(s, ",") {
			wantLabels = append(wantLabels, key(strings.TrimSpace(l)))
		}
	}
	since, err := sinceFilter(r, "Issue")
	if err != nil {
		writeError(w, err)
		return
	}
	var list []*issue
	for _, is := range c.repo.Issues {
		if state != "all" && is.State != state {
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
			if !is.hasLabel(l) {
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
	writeList(e, w, r, list, func(is *issue) obj { return e.renderIssue(c.repo, is) })
}

func (e *Emulator) getIssue(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderIssue(c.repo, is))
}

// createIssue opens an issue. Labels it names that the repository lacks are created,
// as GitHub does for callers allowed to label.
func (e *Emulator) createIssue(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Title     *string  `json:"title"`
		Body      string   `json:"body"`
		Labels    []string `json:"labels"`
		Assignees []string `json:"assignees"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		writeError(w, errValidation("Issue", "title", "missing_field", "title is required"))
		return
	}
	if !e.mayTriage(c) {
		// GitHub silently drops what a caller without triage access may not set.
		req.Labels, req.Assignees = nil, nil
	}
	assignees := []string{}
	for _, a := range req.Assignees {
		u := e.st.Users[key(a)]
		if u == nil {
			writeError(w, errValidation("Issue", "assignees", "invalid", a+" is not a user"))
			return
		}
		assignees = append(assignees, u.Login)
	}
	for _, l := range req.Labels {
		if strings.TrimSpace(l) == "" {
			writeError(w, errValidation("Issue", "labels", "invalid", "label names cannot be blank"))
			return
		}
	}
	now := e.timestamp()
	is := &issue{ID: e.st.nextID(), Number: c.repo.NextNumber, Title: *req.Title, Body: req.Body,
		User: c.who.actor(), State: "open", CreatedAt: now, UpdatedAt: now,
		Labels: e.labelKeys(c.repo, req.Labels), Assignees: assignees}
	c.repo.NextNumber++
	c.repo.Issues[is.Number] = is
	c.mutated = true
	rendered := e.renderIssue(c.repo, is)
	e.emit("issues", "opened", c.repo, c.who.actor(), obj{"issue": rendered})
	writeJSON(w, http.StatusCreated, rendered)
}

// ensureLabel creates a repository label on first use, as GitHub does when an issue is
// given a label name the repository does not have yet.
func (e *Emulator) ensureLabel(rp *repo, name string) *label {
	if l := rp.Labels[key(name)]; l != nil {
		return l
	}
	l := &label{ID: e.st.nextID(), Name: name, Color: defaultLabelColor}
	rp.Labels[key(name)] = l
	return l
}

func (e *Emulator) editIssue(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		fieldsEdit
		Labels *[]string `json:"labels"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	// Readers may edit only their own issues, and never their labels.
	if !e.mayTriage(c) {
		if key(is.User) != key(c.who.actor()) {
			writeError(w, newError(http.StatusForbidden, "Must have triage access to edit another user's issue."))
			return
		}
		req.Labels = nil
	}
	if err := req.check("Issue"); err != nil {
		writeError(w, err)
		return
	}
	changes, action := e.applyFields(c, is, &req.fieldsEdit)
	if len(changes) > 0 {
		e.emit("issues", "edited", c.repo, c.who.actor(), obj{"issue": e.renderIssue(c.repo, is), "changes": changes})
	}
	if req.Labels != nil {
		e.replaceLabels(c, is, e.labelKeys(c.repo, *req.Labels))
	}
	if action != "" {
		e.emitIssueEvent(c.repo, is, action, c.who.actor(), obj{})
	}
	writeJSON(w, http.StatusOK, e.renderIssue(c.repo, is))
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
		return errValidation(resource, "title", "missing_field", "title cannot be blank")
	}
	if ed.State != nil && *ed.State != "open" && *ed.State != "closed" {
		return errValidation(resource, "state", "invalid", "state must be open or closed")
	}
	return nil
}

// apply changes the issue's title, body and state, and returns the webhook "changes"
// and the state action ("closed", "reopened" or "").
func (e *Emulator) applyFields(c *call, is *issue, ed *fieldsEdit) (obj, string) {
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
		now := e.timestamp()
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
	is.UpdatedAt = e.timestamp()
	c.mutated = true
	return changes, action
}

// emitIssueEvent sends an issue's webhook, or the pull_request one when the issue is a
// pull request, as GitHub does for labels and state changes made through the issues API.
func (e *Emulator) emitIssueEvent(rp *repo, is *issue, action, sender string, extra obj) {
	body := obj{}
	for k, v := range extra {
		body[k] = v
	}
	if p := rp.Pulls[is.Number]; is.IsPull && p != nil {
		body["number"] = is.Number
		body["pull_request"] = e.renderPull(rp, is, p)
		e.emit("pull_request", action, rp, sender, body)
		return
	}
	body["issue"] = e.renderIssue(rp, is)
	e.emit("issues", action, rp, sender, body)
}

// mayTriage reports whether the caller may label and assign: the App (its route check
// already required issues write) or a user with triage access or more.
func (e *Emulator) mayTriage(c *call) bool {
	return c.who.token != nil || roleAtLeast(e.roleOf(c.who.user, c.repo), "triage")
}
