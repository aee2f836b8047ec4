package rest

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/state"
)

// Pull request reviews, their inline comments and threads: the routes decode and
// render; package conversation does what they ask, as it does for the web view.

// who is the caller as the conversation's operations name actors.
func (c *call) actorOf() conversation.Actor {
	a := conversation.Actor{Login: c.who.actor(), App: appSlugOf(c.st, c.who)}
	if c.who != nil && c.who.token != nil {
		a.ViaApp = true
	} else if c.who != nil && c.repo != nil {
		a.Role = c.repo.Role(c.who.user)
	}
	return a
}

// review is the route's {review_id} of the route's pull request, as the caller sees it:
// pullReview is the pull request and the review a route's path names.
func (c *call) pullReview() (*state.Issue, *state.Pull, *state.Review, error) {
	is, p, err := c.pull()
	if err != nil {
		return nil, nil, nil, err
	}
	rv, err := c.review(p)
	if err != nil {
		return nil, nil, nil, err
	}
	return is, p, rv, nil
}

// someone else's pending review is not found.
func (c *call) review(p *state.Pull) (*state.Review, error) {
	id, err := strconv.ParseInt(c.params["review_id"], 10, 64)
	if err != nil {
		return nil, apierr.NotFound()
	}
	rv := c.repo.Review(id)
	if rv == nil || rv.PullNumber != p.Number || (rv.State == "PENDING" && state.Key(rv.User) != state.Key(c.who.actor())) {
		return nil, apierr.NotFound()
	}
	return rv, nil
}

// reviewComment is the route's {comment_id}, an inline comment the caller sees.
func (c *call) reviewComment() (*state.ReviewComment, error) {
	id, err := strconv.ParseInt(c.params["comment_id"], 10, 64)
	if err != nil {
		return nil, apierr.NotFound()
	}
	rc := c.repo.ReviewComment(id)
	if rc == nil {
		return nil, apierr.NotFound()
	}
	if rv := c.repo.Review(rc.ReviewID); rv == nil || (rv.State == "PENDING" && state.Key(rv.User) != state.Key(c.who.actor())) {
		return nil, apierr.NotFound()
	}
	return rc, nil
}

func (a *API) listReviews(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	writeList(c, w, r, c.repo.VisibleReviews(p.Number, c.who.actor()), func(rv *state.Review) obj { return c.rn.Review(c.repo, rv) })
}

func (a *API) createReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Body     string                     `json:"body"`
		Event    string                     `json:"event"`
		CommitID string                     `json:"commit_id"`
		Comments []conversation.CommentSpec `json:"comments"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	rv, err := a.conv.CreateReview(r.Context(), c.st, c.repo, is, p, c.actorOf(), conversation.ReviewRequest{
		Body: req.Body, Event: req.Event, CommitID: req.CommitID, Comments: req.Comments})
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Review(c.repo, rv))
}

// getReview serves GET …/pulls/{n}/reviews/{review_id}.
func (a *API) getReview(w http.ResponseWriter, r *http.Request, c *call) {
	_, _, rv, err := c.pullReview()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Review(c.repo, rv))
}

// updateReview serves PUT …/pulls/{n}/reviews/{review_id} {body}.
func (a *API) updateReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, rv, err := c.pullReview()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Body *string `json:"body"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Body == nil {
		apierr.Write(w, apierr.Validation("PullRequestReview", "body", "missing_field", "body is required"))
		return
	}
	if err := a.conv.UpdateReview(c.st, c.repo, is, p, rv, c.actorOf(), *req.Body); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Review(c.repo, rv))
}

// deletePendingReview serves DELETE …/pulls/{n}/reviews/{review_id}.
func (a *API) deletePendingReview(w http.ResponseWriter, r *http.Request, c *call) {
	_, _, rv, err := c.pullReview()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	rendered := c.rn.Review(c.repo, rv)
	if err := a.conv.DeletePendingReview(c.st, c.repo, rv, c.actorOf()); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, rendered)
}

// submitReview serves POST …/pulls/{n}/reviews/{review_id}/events {event, body}.
func (a *API) submitReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, rv, err := c.pullReview()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Body  string `json:"body"`
		Event string `json:"event"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if err := a.conv.SubmitReview(c.st, c.repo, is, p, rv, c.actorOf(), req.Event, req.Body); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Review(c.repo, rv))
}

// dismissReview serves PUT …/pulls/{n}/reviews/{review_id}/dismissals {message}.
func (a *API) dismissReview(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, rv, err := c.pullReview()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Message string `json:"message"`
		Event   string `json:"event"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Event != "" && req.Event != "DISMISS" {
		apierr.Write(w, apierr.Validation("PullRequestReview", "event", "invalid", "event must be DISMISS"))
		return
	}
	if err := a.conv.DismissReview(c.st, c.repo, is, p, rv, c.actorOf(), req.Message); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Review(c.repo, rv))
}

// listPullComments serves GET /repos/{o}/{r}/pulls/{n}/comments.
func (a *API) listPullComments(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	a.writeReviewComments(w, r, c, c.repo.VisibleReviewComments(p.Number, 0, c.who.actor()))
}

// listRepoReviewComments serves GET /repos/{o}/{r}/pulls/comments: every pull
// request's inline comments.
func (a *API) listRepoReviewComments(w http.ResponseWriter, r *http.Request, c *call) {
	var list []*state.ReviewComment
	for _, rc := range c.repo.AllReviewComments() {
		if rv := c.repo.Review(rc.ReviewID); rv != nil && (rv.State != "PENDING" || state.Key(rv.User) == state.Key(c.who.actor())) {
			list = append(list, rc)
		}
	}
	a.writeReviewComments(w, r, c, list)
}

// writeReviewComments answers a list of inline comments with GitHub's since and
// direction filters (created, oldest first by default).
func (a *API) writeReviewComments(w http.ResponseWriter, r *http.Request, c *call, list []*state.ReviewComment) {
	since, err := sinceFilter(r, "PullRequestReviewComment")
	if err != nil {
		apierr.Write(w, err)
		return
	}
	kept := list[:0]
	for _, rc := range list {
		if !rc.Updated().Before(since) {
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
	_, p, rv, err := c.pullReview()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	writeList(c, w, r, c.repo.VisibleReviewComments(p.Number, rv.ID, c.who.actor()),
		func(rc *state.ReviewComment) obj { return c.rn.ReviewComment(c.repo, rc) })
}

// createPullComment serves POST …/pulls/{n}/comments: one inline comment on its own,
// or, with in_reply_to, a reply (every other field is then ignored, as on GitHub).
func (a *API) createPullComment(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		conversation.CommentSpec
		CommitID  string `json:"commit_id"`
		InReplyTo int64  `json:"in_reply_to"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	var rc *state.ReviewComment
	if req.InReplyTo != 0 {
		to := c.repo.ReviewComment(req.InReplyTo)
		if to == nil || to.PullNumber != p.Number {
			apierr.Write(w, apierr.NotFound())
			return
		}
		rc, err = a.conv.Reply(c.st, c.repo, is, p, to, c.actorOf(), req.Body)
	} else {
		rc, err = a.conv.SingleComment(r.Context(), c.st, c.repo, is, p, c.actorOf(), req.CommitID, req.CommentSpec)
	}
	if err != nil {
		apierr.Write(w, err)
		return
	}
	a.writeCreatedComment(w, c, rc)
}

// createReply serves POST …/pulls/{n}/comments/{comment_id}/replies {body}.
func (a *API) createReply(w http.ResponseWriter, r *http.Request, c *call) {
	is, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	to, err := c.reviewComment()
	if err == nil && to.PullNumber != p.Number {
		err = apierr.NotFound()
	}
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Body *string `json:"body"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	rc, err := a.conv.Reply(c.st, c.repo, is, p, to, c.actorOf(), body)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	a.writeCreatedComment(w, c, rc)
}

// writeCreatedComment answers 201 with the comment and its Location, as GitHub does.
func (a *API) writeCreatedComment(w http.ResponseWriter, c *call, rc *state.ReviewComment) {
	rendered := c.rn.ReviewComment(c.repo, rc)
	w.Header().Set("Location", rendered["url"].(string))
	apierr.WriteJSON(w, http.StatusCreated, rendered)
}

// getReviewComment serves GET /repos/{o}/{r}/pulls/comments/{comment_id}.
func (a *API) getReviewComment(w http.ResponseWriter, r *http.Request, c *call) {
	rc, err := c.reviewComment()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.ReviewComment(c.repo, rc))
}

// editReviewComment serves PATCH /repos/{o}/{r}/pulls/comments/{comment_id} {body}.
func (a *API) editReviewComment(w http.ResponseWriter, r *http.Request, c *call) {
	rc, err := c.reviewComment()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req struct {
		Body string `json:"body"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if err := a.conv.EditReviewComment(c.st, c.repo, rc, c.actorOf(), req.Body); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.ReviewComment(c.repo, rc))
}

// deleteReviewComment serves DELETE /repos/{o}/{r}/pulls/comments/{comment_id}.
func (a *API) deleteReviewComment(w http.ResponseWriter, r *http.Request, c *call) {
	rc, err := c.reviewComment()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if err := a.conv.DeleteReviewComment(c.st, c.repo, rc, c.actorOf()); err != nil {
		apierr.Write(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
