package conversation

import (
	"context"
	"net/http"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// Review states by the event that asks for them; no event leaves a review pending.
var reviewStates = map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING"}

// Review events, as GitHub's API names them.
const (
	EventApprove        = "APPROVE"
	EventRequestChanges = "REQUEST_CHANGES"
	EventComment        = "COMMENT"
)

// ReviewRequest is a review asked for (POST …/pulls/{n}/reviews).
type ReviewRequest struct {
	Body string
	// Event is APPROVE, REQUEST_CHANGES or COMMENT; "" leaves the review pending, to be
	// submitted later (SubmitReview).
	Event string
	// CommitID is the commit reviewed; "" is the head.
	CommitID string
	Comments []CommentSpec
}

// msgOnePending is GitHub's refusal of a second pending review by one person, which any
// new review (a reply included) runs into while its author has one pending.
const msgOnePending = "user_id can only have one pending review per pull request"

// CreateReview records a review with its inline comments, whole or not at all, and
// sends pull_request_review submitted, then pull_request_review_comment created for
// each comment, unless it is left pending.
func (s *Service) CreateReview(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who Actor, req ReviewRequest) (*state.Review, error) {
	return s.createReview(ctx, w, rp, is, p, who, req, (*anchorError).forReview)
}

// createReview is CreateReview, with a comment that does not land in the diff refused
// as refuse words it.
func (s *Service) createReview(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who Actor, req ReviewRequest,
	refuse func(*anchorError) error) (*state.Review, error) {
	st, ok := reviewStates[req.Event]
	if !ok {
		return nil, apierr.Validation("PullRequestReview", "event", "invalid", "event must be APPROVE, REQUEST_CHANGES or COMMENT")
	}
	if is.State != "open" {
		return nil, apierr.Unprocessable("Unprocessable Entity: the pull request is closed")
	}
	if err := checkVerdict(is, who, st, req.Body, len(req.Comments), req.Event); err != nil {
		return nil, err
	}
	if rp.PendingReview(p.Number, who.Login) != nil {
		// The review route's 422 carries plain strings (validation-error-simple).
		return nil, apierr.UnprocessableList(msgOnePending)
	}
	commit := req.CommitID
	if commit == "" {
		commit = p.HeadSHA
	} else if _, err := s.git.Commit(ctx, rp.Owner, rp.Name, commit); err != nil {
		return nil, apierr.Unprocessable("No commit found for SHA: " + commit)
	}
	// Every comment is resolved before anything is stored: GitHub creates a review with
	// its comments whole or refuses it whole.
	var comments []*state.ReviewComment
	if len(req.Comments) > 0 {
		files, err := s.PullDiff(ctx, rp, p.Number, p.BaseSHA, commit)
		if err != nil {
			return nil, err
		}
		for _, cr := range req.Comments {
			rc, aerr := resolveComment(files, cr)
			if aerr != nil {
				return nil, refuse(aerr)
			}
			comments = append(comments, rc)
		}
	}
	now := w.Timestamp()
	rv := &state.Review{ID: w.NextID(), PullNumber: p.Number, User: who.Login, Body: req.Body, State: st,
		CommitID: commit, ViaApp: who.ViaApp}
	if st != "PENDING" {
		rv.SubmittedAt = now
	}
	rp.AddReview(rv)
	for _, rc := range comments {
		rc.ID, rc.ReviewID, rc.PullNumber, rc.User, rc.CommitID, rc.CreatedAt = w.NextID(), rv.ID, p.Number, who.Login, commit, now
		rp.AddReviewComment(rc)
	}
	if st != "PENDING" {
		s.submitted(w, rp, is, p, rv, who.Login)
	}
	return rv, nil
}

// checkVerdict refuses what GitHub refuses of a submitted review: approving or asking
// for changes on one's own pull request, and asking for changes or commenting with
// neither a body nor an inline comment.
func checkVerdict(is *state.Issue, who Actor, st, body string, comments int, event string) error {
	if state.Key(who.Login) == state.Key(is.User) && (st == "APPROVED" || st == "CHANGES_REQUESTED") {
		verb := "approve"
		if st == "CHANGES_REQUESTED" {
			verb = "request changes on"
		}
		return apierr.Unprocessable("Unprocessable Entity: Can not " + verb + " your own pull request")
	}
	if (st == "CHANGES_REQUESTED" || st == "COMMENTED") && strings.TrimSpace(body) == "" && comments == 0 {
		return apierr.Unprocessable("Unprocessable Entity: Review body is required for " + event)
	}
	if len(body) > MaxBody {
		return apierr.Validation("PullRequestReview", "body", "custom", "Body is too long (maximum is 65536 characters)")
	}
	return nil
}

// submitted announces a review just submitted: pull_request_review submitted, then
// pull_request_review_comment created for each of its inline comments, as GitHub
// announces each comment of a review on its own.
func (s *Service) submitted(w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, rv *state.Review, sender string) {
	rn := s.renderer(w)
	simple := rn.SimplePull(rp, is, p)
	s.emit(w, "pull_request_review", "submitted", rp, sender, obj{"review": rn.HookReview(rp, rv), "pull_request": simple})
	for _, rc := range rp.VisibleReviewComments(p.Number, rv.ID, rv.User) {
		s.emit(w, "pull_request_review_comment", "created", rp, sender, obj{"comment": rn.ReviewComment(rp, rc), "pull_request": simple})
	}
}

// SubmitReview submits who's pending review with an event (and a body, which replaces
// the one it had when not empty), as POST …/reviews/{id}/events does, with the webhooks
// CreateReview sends for a review submitted at once.
func (s *Service) SubmitReview(w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, rv *state.Review, who Actor, event, body string) error {
	if rv.State != "PENDING" {
		return apierr.UnprocessableList("Review has already been submitted.")
	}
	if state.Key(rv.User) != state.Key(who.Login) {
		// Someone else's pending review is invisible to the caller.
		return apierr.NotFound()
	}
	st, ok := reviewStates[event]
	if !ok || event == "" {
		return apierr.Validation("PullRequestReview", "event", "invalid", "event must be APPROVE, REQUEST_CHANGES or COMMENT")
	}
	if is.State != "open" {
		return apierr.Unprocessable("Unprocessable Entity: the pull request is closed")
	}
	if body == "" {
		body = rv.Body
	}
	if err := checkVerdict(is, who, st, body, len(rp.VisibleReviewComments(p.Number, rv.ID, who.Login)), event); err != nil {
		return err
	}
	rv.Body, rv.State, rv.SubmittedAt = body, st, w.Timestamp()
	w.MarkChanged()
	s.submitted(w, rp, is, p, rv, who.Login)
	return nil
}

// UpdateReview replaces a review's body (PUT …/reviews/{id}); a submitted review's
// edit sends pull_request_review edited with the body it had.
func (s *Service) UpdateReview(w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, rv *state.Review, who Actor, body string) error {
	if state.Key(rv.User) != state.Key(who.Login) {
		if rv.State == "PENDING" {
			return apierr.NotFound()
		}
		return apierr.New(http.StatusForbidden, "Only the review's author can edit it.")
	}
	if len(body) > MaxBody {
		return apierr.Validation("PullRequestReview", "body", "custom", "Body is too long (maximum is 65536 characters)")
	}
	if (rv.State == "CHANGES_REQUESTED" || rv.State == "COMMENTED") && strings.TrimSpace(body) == "" &&
		len(rp.VisibleReviewComments(p.Number, rv.ID, who.Login)) == 0 {
		return apierr.Unprocessable("Unprocessable Entity: Review body is required")
	}
	if body == rv.Body {
		return nil
	}
	from := rv.Body
	rv.Body = body
	w.MarkChanged()
	if rv.State == "PENDING" {
		return nil
	}
	rn := s.renderer(w)
	s.emit(w, "pull_request_review", "edited", rp, who.Login, obj{"review": rn.HookReview(rp, rv),
		"pull_request": rn.SimplePull(rp, is, p), "changes": obj{"body": obj{"from": from}}})
	return nil
}

// DismissReview dismisses an approval or a request for changes (PUT
// …/reviews/{id}/dismissals), with pull_request_review dismissed: it no longer counts
// for branch protection.
func (s *Service) DismissReview(w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, rv *state.Review, who Actor, message string) error {
	if !who.mayWrite() {
		return apierr.New(http.StatusForbidden, "Must have write access to dismiss a review.")
	}
	if strings.TrimSpace(message) == "" {
		return apierr.Validation("PullRequestReview", "message", "missing_field", "message is required")
	}
	switch rv.State {
	case "APPROVED", "CHANGES_REQUESTED":
	case "PENDING":
		if state.Key(rv.User) != state.Key(who.Login) {
			return apierr.NotFound()
		}
		return apierr.UnprocessableList("Can not dismiss a pending pull request review")
	default:
		return apierr.UnprocessableList("Can not dismiss a " + strings.ToLower(rv.State) + " pull request review")
	}
	rv.State, rv.DismissedBy, rv.DismissMessage = "DISMISSED", who.Login, message
	w.MarkChanged()
	rn := s.renderer(w)
	s.emit(w, "pull_request_review", "dismissed", rp, who.Login, obj{"review": rn.HookReview(rp, rv),
		"pull_request": rn.SimplePull(rp, is, p)})
	return nil
}

// DeletePendingReview deletes who's pending review and its comments (DELETE
// …/reviews/{id}); a submitted review cannot be deleted.
func (s *Service) DeletePendingReview(w *state.World, rp *state.Repo, rv *state.Review, who Actor) error {
	if rv.State != "PENDING" {
		return apierr.UnprocessableList("Can not delete a non-pending pull request review")
	}
	if state.Key(rv.User) != state.Key(who.Login) {
		return apierr.NotFound()
	}
	rp.DeleteReview(rv.ID)
	return nil
}

// AddPendingComment adds an inline comment to who's pending review of the head,
// starting one if they have none: the web view's "Start a review" and "Add review
// comment", GraphQL's addPullRequestReviewThread. Nothing is announced until the
// review is submitted.
func (s *Service) AddPendingComment(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who Actor, spec CommentSpec) (*state.ReviewComment, error) {
	if err := CheckBody("PullRequestReviewComment", spec.Body); err != nil {
		return nil, err
	}
	if is.State != "open" {
		return nil, apierr.Unprocessable("Unprocessable Entity: the pull request is closed")
	}
	rv := rp.PendingReview(p.Number, who.Login)
	commit := p.HeadSHA
	if rv != nil {
		commit = rv.CommitID
	}
	files, err := s.PullDiff(ctx, rp, p.Number, p.BaseSHA, commit)
	if err != nil {
		return nil, err
	}
	rc, aerr := resolveComment(files, spec)
	if aerr != nil {
		return nil, aerr.forReview()
	}
	if rv == nil {
		rv = &state.Review{ID: w.NextID(), PullNumber: p.Number, User: who.Login, State: "PENDING", CommitID: commit, ViaApp: who.ViaApp}
		rp.AddReview(rv)
	}
	rc.ID, rc.ReviewID, rc.PullNumber, rc.User, rc.CommitID, rc.CreatedAt = w.NextID(), rv.ID, p.Number, who.Login, commit, w.Timestamp()
	rp.AddReviewComment(rc)
	return rc, nil
}
