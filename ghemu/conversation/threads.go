package conversation

import (
	"context"
	"net/http"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// A review thread is an inline comment and the replies to it. On GitHub a comment made
// on its own (POST …/pulls/{n}/comments) or as a reply is a review of its own too: a
// review in state COMMENTED with no body, announced with pull_request_review submitted
// and pull_request_review_comment created, like any review.

// SingleComment is one inline comment made on its own, on commitID's diff (POST
// …/pulls/{n}/comments): a commented review holding it.
func (s *Service) SingleComment(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who Actor, commitID string, spec CommentSpec) (*state.ReviewComment, error) {
	if err := CheckBody("PullRequestReviewComment", spec.Body); err != nil {
		return nil, err
	}
	if commitID == "" {
		return nil, apierr.Validation("PullRequestReviewComment", "commit_id", "missing_field", "commit_id is required")
	}
	if rp.PendingReview(p.Number, who.Login) != nil {
		return nil, apierr.Validation("PullRequestReview", "user_id", "custom", msgOnePending)
	}
	rv, err := s.createReview(ctx, w, rp, is, p, who, ReviewRequest{Event: EventComment, CommitID: commitID, Comments: []CommentSpec{spec}},
		(*anchorError).forComment)
	if err != nil {
		return nil, err
	}
	return rp.VisibleReviewComments(p.Number, rv.ID, who.Login)[0], nil
}

// Reply answers a review thread (POST …/pulls/{n}/comments/{id}/replies): a comment on
// the thread's line, in a commented review of its own. A reply to a reply joins its
// thread: GitHub keeps threads one level deep.
func (s *Service) Reply(w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, to *state.ReviewComment, who Actor, body string) (*state.ReviewComment, error) {
	if err := CheckBody("PullRequestReviewComment", body); err != nil {
		return nil, err
	}
	root := rp.ReviewComment(to.Root())
	if root == nil || root.PullNumber != p.Number || !s.visible(rp, root, who.Login) {
		return nil, apierr.NotFound()
	}
	if is.State != "open" {
		return nil, apierr.Unprocessable("Unprocessable Entity: the pull request is closed")
	}
	if rp.PendingReview(p.Number, who.Login) != nil {
		return nil, apierr.Validation("PullRequestReview", "user_id", "custom", msgOnePending)
	}
	now := w.Timestamp()
	rv := &state.Review{ID: w.NextID(), PullNumber: p.Number, User: who.Login, State: "COMMENTED",
		CommitID: p.HeadSHA, SubmittedAt: now, ViaApp: who.ViaApp}
	rp.AddReview(rv)
	rc := &state.ReviewComment{ID: w.NextID(), ReviewID: rv.ID, PullNumber: p.Number, User: who.Login, Body: body,
		Path: root.Path, Line: root.Line, Side: root.Side, StartLine: root.StartLine, StartSide: root.StartSide,
		Position: root.Position, DiffHunk: root.DiffHunk, CommitID: root.CommitID, CreatedAt: now, InReplyTo: root.ID}
	rp.AddReviewComment(rc)
	s.submitted(w, rp, is, p, rv, who.Login)
	return rc, nil
}

// visible reports whether viewer sees the comment: a pending review's only its author.
func (s *Service) visible(rp *state.Repo, rc *state.ReviewComment, viewer string) bool {
	rv := rp.Review(rc.ReviewID)
	return rv != nil && (rv.State != "PENDING" || state.Key(rv.User) == state.Key(viewer))
}

// mayChange reports whether who may edit or delete a comment: its author, the App, or
// a writer.
func mayChange(author string, who Actor) bool {
	return state.Key(author) == state.Key(who.Login) || who.mayWrite()
}

// EditReviewComment replaces an inline comment's body (PATCH …/pulls/comments/{id}),
// recording when, with pull_request_review_comment edited and the body it had, once
// its review is submitted.
func (s *Service) EditReviewComment(w *state.World, rp *state.Repo, rc *state.ReviewComment, who Actor, body string) error {
	if !s.visible(rp, rc, who.Login) {
		return apierr.NotFound()
	}
	if !mayChange(rc.User, who) {
		return apierr.New(http.StatusForbidden, "You cannot edit this comment.")
	}
	if err := CheckBody("PullRequestReviewComment", body); err != nil {
		return err
	}
	if body == rc.Body {
		return nil
	}
	from := rc.Body
	rc.Body, rc.UpdatedAt = body, w.Timestamp()
	w.MarkChanged()
	if rp.Review(rc.ReviewID).State == "PENDING" {
		return nil
	}
	rn := s.renderer(w)
	is, p := rp.Issue(rc.PullNumber), rp.Pull(rc.PullNumber)
	s.emit(w, "pull_request_review_comment", "edited", rp, who.Login, obj{"comment": rn.ReviewComment(rp, rc),
		"pull_request": rn.SimplePull(rp, is, p), "changes": obj{"body": obj{"from": from}}})
	return nil
}

// DeleteReviewComment deletes an inline comment (DELETE …/pulls/comments/{id}), with
// pull_request_review_comment deleted once its review is submitted. Its replies stay.
func (s *Service) DeleteReviewComment(w *state.World, rp *state.Repo, rc *state.ReviewComment, who Actor) error {
	if !s.visible(rp, rc, who.Login) {
		return apierr.NotFound()
	}
	if !mayChange(rc.User, who) {
		return apierr.New(http.StatusForbidden, "You cannot delete this comment.")
	}
	pending := rp.Review(rc.ReviewID).State == "PENDING"
	rn := s.renderer(w)
	rendered := rn.ReviewComment(rp, rc)
	rp.DeleteReviewComment(rc.ID)
	if pending {
		return nil
	}
	is, p := rp.Issue(rc.PullNumber), rp.Pull(rc.PullNumber)
	s.emit(w, "pull_request_review_comment", "deleted", rp, who.Login, obj{"comment": rendered,
		"pull_request": rn.SimplePull(rp, is, p)})
	return nil
}

// ResolveThread marks the thread whose first comment is root resolved or not, as a
// writer or the pull request's author does (GraphQL's resolveReviewThread; GitHub's
// REST API has no route for it), with pull_request_review_thread resolved or
// unresolved. A thread already so is left alone, and nothing is sent.
func (s *Service) ResolveThread(w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, root int64, who Actor, resolved bool) error {
	thread := rp.Thread(root)
	if len(thread) == 0 || thread[0].PullNumber != p.Number || !s.visible(rp, thread[0], who.Login) ||
		rp.Review(thread[0].ReviewID).State == "PENDING" {
		return apierr.NotFound()
	}
	if !who.mayWrite() && state.Key(who.Login) != state.Key(is.User) {
		return apierr.New(http.StatusForbidden, "Resolving a conversation needs write access or the pull request's authorship.")
	}
	first := thread[0]
	if first.Resolved == resolved {
		return nil
	}
	first.Resolved, first.ResolvedBy = resolved, ""
	if resolved {
		first.ResolvedBy = who.Login
	}
	w.MarkChanged()
	action := "resolved"
	if !resolved {
		action = "unresolved"
	}
	rn := s.renderer(w)
	s.emit(w, "pull_request_review_thread", action, rp, who.Login, obj{"thread": rn.Thread(rp, thread),
		"pull_request": rn.SimplePull(rp, is, p)})
	return nil
}
