package rest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

func (a *API) listReviews(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	writeList(c, w, r, c.repo.Reviews(p.Number), func(rv *state.Review) obj { return c.rn.Review(c.repo, rv) })
}

var reviewStates = map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING"}

func (a *API) createReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Body     string             `json:"body"`
		Event    string             `json:"event"`
		CommitID string             `json:"commit_id"`
		Comments []reviewCommentReq `json:"comments"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	st, ok := reviewStates[req.Event]
	if !ok {
		apierr.Write(w, apierr.Validation("PullRequestReview", "event", "invalid", "event must be APPROVE, REQUEST_CHANGES or COMMENT"))
		return
	}
	if is.State != "open" {
		apierr.Write(w, apierr.Unprocessable("Unprocessable Entity: the pull request is closed"))
		return
	}
	actor := c.who.actor()
	if state.Key(actor) == state.Key(is.User) && (st == "APPROVED" || st == "CHANGES_REQUESTED") {
		verb := "approve"
		if st == "CHANGES_REQUESTED" {
			verb = "request changes on"
		}
		apierr.Write(w, apierr.Unprocessable("Unprocessable Entity: Can not "+verb+" your own pull request"))
		return
	}
	if (st == "CHANGES_REQUESTED" || st == "COMMENTED") && strings.TrimSpace(req.Body) == "" && len(req.Comments) == 0 {
		apierr.Write(w, apierr.Unprocessable("Unprocessable Entity: Review body is required for "+req.Event))
		return
	}
	commit := req.CommitID
	if commit == "" {
		commit = p.HeadSHA
	} else if !a.commitExists(r.Context(), c.repo, commit) {
		apierr.Write(w, apierr.Unprocessable("No commit found for SHA: "+commit))
		return
	}
	// Every comment is resolved before anything is stored: GitHub creates a review with
	// its comments whole or refuses it whole.
	var comments []*state.ReviewComment
	if len(req.Comments) > 0 {
		files, err := a.pullDiff(r.Context(), c.repo, p.Number, p.BaseSHA, commit)
		if err != nil {
			apierr.Write(w, err)
			return
		}
		for _, cr := range req.Comments {
			rc, err := resolveReviewComment(files, cr)
			if err != nil {
				apierr.Write(w, err)
				return
			}
			comments = append(comments, rc)
		}
	}
	now := c.st.Timestamp()
	rv := &state.Review{ID: c.st.NextID(), PullNumber: p.Number, User: actor, Body: req.Body, State: st,
		CommitID: commit, SubmittedAt: now, ViaApp: c.who.token != nil}
	c.repo.AddReview(rv)
	for _, rc := range comments {
		rc.ID, rc.ReviewID, rc.PullNumber, rc.User, rc.CommitID, rc.CreatedAt = c.st.NextID(), rv.ID, p.Number, actor, commit, now
		c.repo.AddReviewComment(rc)
	}
	rendered := c.rn.Review(c.repo, rv)
	if st != "PENDING" {
		simple := c.rn.SimplePull(c.repo, is, p)
		c.emit("pull_request_review", "submitted", c.repo, actor, obj{"review": c.rn.HookReview(c.repo, rv), "pull_request": simple})
		// GitHub also announces each comment of a submitted review on its own.
		for _, rc := range comments {
			c.emit("pull_request_review_comment", "created", c.repo, actor, obj{
				"comment": c.rn.ReviewComment(c.repo, rc), "pull_request": simple})
		}
	}
	apierr.WriteJSON(w, http.StatusOK, rendered)
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
func resolveReviewComment(files []gitserver.FileDiff, cr reviewCommentReq) (*state.ReviewComment, error) {
	var lines []gitserver.PatchLine
	found := false
	for _, f := range files {
		if f.Path == cr.Path {
			lines, found = gitserver.ParsePatch(f.Patch), true
			break
		}
	}
	if !found || cr.Path == "" {
		return nil, apierr.UnprocessableList(msgPathUnresolved)
	}
	rc := &state.ReviewComment{Path: cr.Path, Body: cr.Body}
	var idx int
	switch {
	case cr.Line == nil && cr.Position != nil:
		// The position form names a line of the diff itself; hunk headers and git's
		// "\ No newline" markers are not lines one can comment on.
		idx = *cr.Position
		if idx < 1 || idx >= len(lines) || lines[idx].Kind == '@' || lines[idx].Kind == '\\' {
			return nil, apierr.UnprocessableList(msgPositionInvalid)
		}
		rc.Side, rc.Line = reviewSideRight, lines[idx].New
		if lines[idx].Kind == '-' {
			rc.Side, rc.Line = reviewSideLeft, lines[idx].Old
		}
	case cr.Line == nil:
		return nil, apierr.UnprocessableList(msgLineUnresolved)
	default:
		rc.Side = cr.Side
		if rc.Side == "" {
			rc.Side = reviewSideRight
		}
		if rc.Side != reviewSideRight && rc.Side != reviewSideLeft {
			return nil, apierr.UnprocessableList(msgSideInvalid)
		}
		rc.Line = *cr.Line
		if idx = findLine(lines, rc.Side, rc.Line); idx < 0 {
			return nil, apierr.UnprocessableList(msgLineUnresolved)
		}
	}
	if cr.StartLine != nil {
		rc.StartLine, rc.StartSide = *cr.StartLine, cr.StartSide
		if rc.StartSide == "" {
			rc.StartSide = rc.Side
		}
		if rc.StartSide != reviewSideRight && rc.StartSide != reviewSideLeft {
			return nil, apierr.UnprocessableList(msgSideInvalid)
		}
		start := findLine(lines, rc.StartSide, rc.StartLine)
		switch {
		case start < 0:
			return nil, apierr.UnprocessableList(msgLineUnresolved)
		case start >= idx:
			return nil, apierr.UnprocessableList(msgStartPrecedes)
		case lines[start].Hunk != lines[idx].Hunk:
			return nil, apierr.UnprocessableList(msgStartSameHunk)
		}
	}
	rc.Position, rc.DiffHunk = idx, diffHunk(lines, idx)
	return rc, nil
}

// listPullComments serves GET /repos/{o}/{r}/pulls/{n}/comments.
func (a *API) listPullComments(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	since, err := sinceFilter(r, "PullRequestReviewComment")
	if err != nil {
		apierr.Write(w, err)
		return
	}
	list := c.repo.VisibleReviewComments(p.Number, 0)
	kept := list[:0]
	for _, rc := range list {
		if !rc.CreatedAt.Before(since) {
			kept = append(kept, rc)
		}
	}
	if r.URL.Query().Get("direction") == "desc" {
		slices.Reverse(kept)
	}
	writeList(c, w, r, kept, func(rc *state.ReviewComment) obj { return c.rn.ReviewComment(c.repo, rc) })
}

// listReviewComments serves GET /repos/{o}/{r}/pulls/{n}/reviews/{review_id}/comments.
func (a *API) listReviewComments(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	id, err := strconv.ParseInt(c.params["review_id"], 10, 64)
	rv := c.repo.Review(id)
	if err != nil || rv == nil || rv.PullNumber != p.Number {
		apierr.Write(w, apierr.NotFound())
		return
	}
	writeList(c, w, r, c.repo.VisibleReviewComments(p.Number, id),
		func(rc *state.ReviewComment) obj { return c.rn.ReviewComment(c.repo, rc) })
}
