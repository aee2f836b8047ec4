package ghemu

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/gitserver"
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
		Body     string             `json:"body"`
		Event    string             `json:"event"`
		CommitID string             `json:"commit_id"`
		Comments []reviewCommentReq `json:"comments"`
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
	} else if _, err := e.commit(r.Context(), c.repo, commit); err != nil || !isSHA(commit) {
		writeError(w, errUnprocessable("No commit found for SHA: "+commit))
		return
	}
	// Every comment is resolved before anything is stored: GitHub creates a review with
	// its comments whole or refuses it whole.
	var comments []*reviewComment
	if len(req.Comments) > 0 {
		p2 := *p
		p2.HeadSHA = commit
		files, err := e.pullDiff(r.Context(), c.repo, &p2)
		if err != nil {
			writeError(w, err)
			return
		}
		for _, cr := range req.Comments {
			rc, err := resolveReviewComment(files, cr)
			if err != nil {
				writeError(w, err)
				return
			}
			comments = append(comments, rc)
		}
	}
	now := e.timestamp()
	rv := &review{ID: e.st.nextID(), PullNumber: p.Number, User: actor, Body: req.Body, State: state,
		CommitID: commit, SubmittedAt: now, ViaApp: c.who.token != nil}
	c.repo.Reviews[rv.ID] = rv
	if c.repo.ReviewComments == nil {
		c.repo.ReviewComments = map[int64]*reviewComment{}
	}
	for _, rc := range comments {
		rc.ID, rc.ReviewID, rc.PullNumber, rc.User, rc.CommitID, rc.CreatedAt = e.st.nextID(), rv.ID, p.Number, actor, commit, now
		c.repo.ReviewComments[rc.ID] = rc
	}
	c.mutated = true
	rendered := e.renderReview(c.repo, rv)
	if state != "PENDING" {
		hookReview := e.renderReview(c.repo, rv)
		hookReview["state"] = strings.ToLower(state)
		simple := e.simplePull(c.repo, is, p)
		e.emit("pull_request_review", "submitted", c.repo, actor, obj{"review": hookReview, "pull_request": simple})
		// GitHub also announces each comment of a submitted review on its own.
		for _, rc := range comments {
			e.emit("pull_request_review_comment", "created", c.repo, actor, obj{
				"comment": e.renderReviewComment(c.repo, rc), "pull_request": simple})
		}
	}
	writeJSON(w, http.StatusOK, rendered)
}

// reviewCommentReq is one entry of a review's "comments": a line (with side, and
// start_line/start_side for a range) or the older diff "position".
type reviewCommentReq struct {
	Path      string `json:"path"`
	Body      string `json:"body"`
	Line      *int   `json:"line"`
	Side      string `json:"side"`
	StartLine *int   `json:"start_line"`
	StartSide string `json:"start_side"`
	Position  *int   `json:"position"`
}

// GitHub's refusals of a review comment that does not land in the diff. The first two
// are what api.github.com answers today (2026, as quoted in warpdotdev/oz-for-oss#310
// and max-sixty/tend#252); the range and position ones are its older "Pull request
// review thread …" wording (ubuntu/WSL#244, parkerbxyz/suggest-changes#28,
// github/github-mcp-server#133), the only one on record for those cases.
const (
	msgPathUnresolved  = "Path could not be resolved"
	msgLineUnresolved  = "Line could not be resolved"
	msgStartPrecedes   = "Pull request review thread start line must precede the end line."
	msgStartSameHunk   = "Pull request review thread start line must be part of the same hunk as the line."
	msgPositionInvalid = "Pull request review thread position is invalid"
	msgSideInvalid     = "Pull request review thread side is invalid"
	reviewSideRight    = "RIGHT"
	reviewSideLeft     = "LEFT"
)

// resolveReviewComment anchors one requested comment on a line of the diff, or says
// why it cannot be, in GitHub's words.
func resolveReviewComment(files []gitserver.FileDiff, cr reviewCommentReq) (*reviewComment, error) {
	var lines []patchLine
	found := false
	for _, f := range files {
		if f.Path == cr.Path {
			lines, found = parsePatch(f.Patch), true
			break
		}
	}
	if !found || cr.Path == "" {
		return nil, errUnprocessableList(msgPathUnresolved)
	}
	rc := &reviewComment{Path: cr.Path, Body: cr.Body}
	var idx int
	switch {
	case cr.Line == nil && cr.Position != nil:
		// The position form names a line of the diff itself; hunk headers and git's
		// "\ No newline" markers are not lines one can comment on.
		idx = *cr.Position
		if idx < 1 || idx >= len(lines) || lines[idx].kind == '@' || lines[idx].kind == '\\' {
			return nil, errUnprocessableList(msgPositionInvalid)
		}
		rc.Side, rc.Line = reviewSideRight, lines[idx].new
		if lines[idx].kind == '-' {
			rc.Side, rc.Line = reviewSideLeft, lines[idx].old
		}
	case cr.Line == nil:
		return nil, errUnprocessableList(msgLineUnresolved)
	default:
		rc.Side = cr.Side
		if rc.Side == "" {
			rc.Side = reviewSideRight
		}
		if rc.Side != reviewSideRight && rc.Side != reviewSideLeft {
			return nil, errUnprocessableList(msgSideInvalid)
		}
		rc.Line = *cr.Line
		if idx = findLine(lines, rc.Side, rc.Line); idx < 0 {
			return nil, errUnprocessableList(msgLineUnresolved)
		}
	}
	if cr.StartLine != nil {
		rc.StartLine, rc.StartSide = *cr.StartLine, cr.StartSide
		if rc.StartSide == "" {
			rc.StartSide = rc.Side
		}
		if rc.StartSide != reviewSideRight && rc.StartSide != reviewSideLeft {
			return nil, errUnprocessableList(msgSideInvalid)
		}
		start := findLine(lines, rc.StartSide, rc.StartLine)
		switch {
		case start < 0:
			return nil, errUnprocessableList(msgLineUnresolved)
		case start >= idx:
			return nil, errUnprocessableList(msgStartPrecedes)
		case lines[start].hunk != lines[idx].hunk:
			return nil, errUnprocessableList(msgStartSameHunk)
		}
	}
	rc.Position, rc.DiffHunk = idx, diffHunk(lines, idx)
	return rc, nil
}

// renderReviewComment renders an inline comment as the REST API and the
// pull_request_review_comment webhook both carry it.
func (e *Emulator) renderReviewComment(rp *repo, rc *reviewComment) obj {
	num := strconv.Itoa(rc.PullNumber)
	id := strconv.FormatInt(rc.ID, 10)
	api := e.baseURL + "/repos/" + rp.fullName() + "/pulls/comments/" + id
	html := e.baseURL + "/" + rp.fullName() + "/pull/" + num + "#discussion_r" + id
	pullAPI := e.baseURL + "/repos/" + rp.fullName() + "/pulls/" + num
	var startLine, startSide any
	if rc.StartLine != 0 {
		startLine, startSide = rc.StartLine, rc.StartSide
	}
	return obj{
		"url": api, "id": rc.ID, "node_id": nodeID("PRRC", rc.ID), "pull_request_review_id": rc.ReviewID,
		"diff_hunk": rc.DiffHunk, "path": rc.Path, "position": rc.Position, "original_position": rc.Position,
		"commit_id": rc.CommitID, "original_commit_id": rc.CommitID, "user": e.renderUser(rc.User),
		"body": rc.Body, "created_at": ts(rc.CreatedAt), "updated_at": ts(rc.CreatedAt),
		"html_url": html, "pull_request_url": pullAPI, "author_association": e.authorAssociation(rp, rc.User),
		"_links":     obj{"self": obj{"href": api}, "html": obj{"href": html}, "pull_request": obj{"href": pullAPI}},
		"start_line": startLine, "original_start_line": startLine, "start_side": startSide,
		"line": rc.Line, "original_line": rc.Line, "side": rc.Side, "subject_type": "line",
		"reactions": e.reactions(api),
	}
}

// visibleReviewComments lists a pull request's inline comments in creation order,
// those of pending reviews left out (GitHub shows them to their author only), and only
// review's when reviewID is not 0.
func (e *Emulator) visibleReviewComments(rp *repo, number int, reviewID int64) []*reviewComment {
	var out []*reviewComment
	for _, rc := range rp.ReviewComments {
		rv := rp.Reviews[rc.ReviewID]
		if rc.PullNumber != number || rv == nil || (reviewID != 0 && rc.ReviewID != reviewID) ||
			(reviewID == 0 && rv.State == "PENDING") {
			continue
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// listPullComments serves GET /repos/{o}/{r}/pulls/{n}/comments.
func (e *Emulator) listPullComments(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	since, err := sinceFilter(r, "PullRequestReviewComment")
	if err != nil {
		writeError(w, err)
		return
	}
	list := e.visibleReviewComments(c.repo, p.Number, 0)
	kept := list[:0]
	for _, rc := range list {
		if !rc.CreatedAt.Before(since) {
			kept = append(kept, rc)
		}
	}
	if r.URL.Query().Get("direction") == "desc" {
		slices.Reverse(kept)
	}
	writeList(e, w, r, kept, func(rc *reviewComment) obj { return e.renderReviewComment(c.repo, rc) })
}

// listReviewComments serves GET /repos/{o}/{r}/pulls/{n}/reviews/{review_id}/comments.
func (e *Emulator) listReviewComments(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := strconv.ParseInt(c.params["review_id"], 10, 64)
	rv := c.repo.Reviews[id]
	if err != nil || rv == nil || rv.PullNumber != p.Number {
		writeError(w, errNotFound())
		return
	}
	writeList(e, w, r, e.visibleReviewComments(c.repo, p.Number, id),
		func(rc *reviewComment) obj { return e.renderReviewComment(c.repo, rc) })
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
