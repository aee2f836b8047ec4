package ghtest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
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
	var since time.Time
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			writeError(w, errValidation("Issue", "since", "invalid", "since must be an ISO 8601 timestamp"))
			return
		}
		since = t
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

// createIssue opens an issue. Labels named in the request are created on the fly only
// when they exist in the repository already; unknown labels are a 422, like GitHub's
// behaviour for users without triage permission is not emulated.
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
	now := e.timestamp()
	is := &issue{ID: e.st.nextID(), Number: c.repo.NextNumber, Title: *req.Title, Body: req.Body,
		User: c.who.actor(), State: "open", CreatedAt: now, UpdatedAt: now, Labels: []string{},
		Assignees: []string{}}
	for _, l := range req.Labels {
		e.ensureLabel(c.repo, l)
		if !is.hasLabel(key(l)) {
			is.Labels = append(is.Labels, key(l))
		}
	}
	for _, a := range req.Assignees {
		if e.st.Users[key(a)] == nil {
			writeError(w, errValidation("Issue", "assignees", "invalid", a+" is not a user"))
			return
		}
		is.Assignees = append(is.Assignees, e.st.Users[key(a)].Login)
	}
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
	l := &label{ID: e.st.nextID(), Name: name, Color: "ededed"}
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
		Title       *string   `json:"title"`
		Body        *string   `json:"body"`
		State       *string   `json:"state"`
		StateReason *string   `json:"state_reason"`
		Labels      *[]string `json:"labels"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	changes := obj{}
	if req.Title != nil && *req.Title != is.Title {
		if strings.TrimSpace(*req.Title) == "" {
			writeError(w, errValidation("Issue", "title", "missing_field", "title cannot be blank"))
			return
		}
		changes["title"] = obj{"from": is.Title}
		is.Title = *req.Title
	}
	if req.Body != nil && *req.Body != is.Body {
		changes["body"] = obj{"from": is.Body}
		is.Body = *req.Body
	}
	action := ""
	if req.State != nil && *req.State != is.State {
		now := e.timestamp()
		switch *req.State {
		case "closed":
			is.State, is.ClosedAt, is.ClosedBy, action = "closed", &now, c.who.actor(), "closed"
			is.StateReason = "completed"
			if req.StateReason != nil {
				is.StateReason = *req.StateReason
			}
		case "open":
			is.State, is.ClosedAt, is.ClosedBy, is.StateReason, action = "open", nil, "", "reopened", "reopened"
		default:
			writeError(w, errValidation("Issue", "state", "invalid", "state must be open or closed"))
			return
		}
	}
	var labelEvents []struct {
		action string
		l      *label
	}
	if req.Labels != nil {
		want := []string{}
		for _, name := range *req.Labels {
			l := e.ensureLabel(c.repo, name)
			if !contains(want, key(l.Name)) {
				want = append(want, key(l.Name))
			}
		}
		for _, k := range is.Labels {
			if !contains(want, k) {
				labelEvents = append(labelEvents, struct {
					action string
					l      *label
				}{"unlabeled", c.repo.Labels[k]})
			}
		}
		for _, k := range want {
			if !is.hasLabel(k) {
				labelEvents = append(labelEvents, struct {
					action string
					l      *label
				}{"labeled", c.repo.Labels[k]})
			}
		}
		is.Labels = want
	}
	is.UpdatedAt = e.timestamp()
	c.mutated = true
	rendered := e.renderIssue(c.repo, is)
	if len(changes) > 0 {
		e.emit("issues", "edited", c.repo, c.who.actor(), obj{"issue": rendered, "changes": changes})
	}
	for _, le := range labelEvents {
		e.emitIssueEvent(c.repo, is, le.action, c.who.actor(), obj{"label": e.renderLabel(c.repo, le.l)})
	}
	if action != "" {
		e.emitIssueEvent(c.repo, is, action, c.who.actor(), obj{})
	}
	writeJSON(w, http.StatusOK, rendered)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
