package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

func (e *Emulator) renderReview(rp *repo, rv *review) obj {
	pullAPI := e.baseURL + "/repos/" + rp.fullName() + "/pulls/" + strconv.Itoa(rv.PullNumber)
	html := e.baseURL + "/" + rp.fullName() + "/pull/" + strconv.Itoa(rv.PullNumber) +
		"#pullrequestreview-" + strconv.FormatInt(rv.ID, 10)
	o := obj{
		"id": rv.ID, "node_id": nodeID("PRR", rv.ID), "user": e.renderUser(rv.User), "body": rv.Body,
		"state": rv.State, "commit_id": rv.CommitID, "html_url": html, "pull_request_url": pullAPI,
		"_links":             obj{"html": obj{"href": html}, "pull_request": obj{"href": pullAPI}},
		"author_association": e.authorAssociation(rp, rv.User),
	}
	if rv.State != "PENDING" {
		o["submitted_at"] = ts(rv.SubmittedAt)
	}
	return o
}

func (e *Emulator) listReviews(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	var list []*review
	for _, rv := range c.repo.Reviews {
		if rv.PullNumber == p.Number {
			list = append(list, rv)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writeList(e, w, r, list, func(rv *review) obj { return e.renderReview(c.repo, rv) })
}

var reviewStates = map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING"}

func (e *Emulator) createReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Body     string `json:"body"`
		Event    string `json:"event"`
		CommitID string `json:"commit_id"`
		Comments []any  `json:"comments"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	state, ok := reviewStates[req.Event]
	if !ok {
		writeError(w, errValidation("PullRequestReview", "event", "invalid", "event must be APPROVE, REQUEST_CHANGES or COMMENT"))
		return
	}
	if is.State != "open" {
		writeError(w, errUnprocessable("Unprocessable Entity: the pull request is closed"))
		return
	}
	actor := c.who.actor()
	if key(actor) == key(is.User) && (state == "APPROVED" || state == "CHANGES_REQUESTED") {
		verb := "approve"
		if state == "CHANGES_REQUESTED" {
			verb = "request changes on"
		}
		writeError(w, errUnprocessable("Unprocessable Entity: Can not "+verb+" your own pull request"))
		return
	}
	if (state == "CHANGES_REQUESTED" || state == "COMMENTED") && strings.TrimSpace(req.Body) == "" && len(req.Comments) == 0 {
		writeError(w, errUnprocessable("Unprocessable Entity: Review body is required for "+req.Event))
		return
	}
	commit := req.CommitID
	if commit == "" {
		commit = p.HeadSHA
	}
	rv := &review{ID: e.st.nextID(), PullNumber: p.Number, User: actor, Body: req.Body, State: state,
		CommitID: commit, SubmittedAt: e.timestamp(), ViaApp: c.who.token != nil}
	c.repo.Reviews[rv.ID] = rv
	c.mutated = true
	rendered := e.renderReview(c.repo, rv)
	if state != "PENDING" {
		hookReview := e.renderReview(c.repo, rv)
		hookReview["state"] = strings.ToLower(state)
		e.emit("pull_request_review", "submitted", c.repo, actor, obj{"review": hookReview,
			"pull_request": e.simplePull(c.repo, is, p)})
	}
	writeJSON(w, http.StatusOK, rendered)
}

// simplePull is the pull request as review webhooks carry it: without the merge and
// size fields that only the pull request API and pull_request events have.
func (e *Emulator) simplePull(rp *repo, is *issue, p *pull) obj {
	o := e.renderPull(rp, is, p)
	for _, k := range []string{"mergeable", "mergeable_state", "rebaseable", "merged", "merged_by",
		"comments", "review_comments", "commits", "additions", "deletions", "changed_files",
		"maintainer_can_modify"} {
		delete(o, k)
	}
	return o
}
