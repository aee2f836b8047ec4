package conversation

import (
	"net/http"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// MaxBody is GitHub's limit on a comment's or a review's length.
const MaxBody = 65536

// CheckBody refuses what GitHub refuses of a comment's body: nothing but space, or more
// than MaxBody characters. resource names the object in the 422.
func CheckBody(resource, body string) error {
	if strings.TrimSpace(body) == "" {
		return apierr.Validation(resource, "body", "missing_field", "body is required")
	}
	if len(body) > MaxBody {
		return apierr.Validation(resource, "body", "custom", "Body is too long (maximum is 65536 characters)")
	}
	return nil
}

// Comment adds a comment to an issue or pull request, with the issue_comment created
// webhook. A locked issue takes comments from the App and writers only.
func (s *Service) Comment(w *state.World, rp *state.Repo, is *state.Issue, who Actor, body string) (*state.Comment, error) {
	if err := CheckBody("IssueComment", body); err != nil {
		return nil, err
	}
	if is.Locked && !who.mayWrite() {
		return nil, apierr.New(http.StatusForbidden, "Unable to create comment because issue is locked.")
	}
	now := w.Timestamp()
	cm := &state.Comment{ID: w.NextID(), IssueNumber: is.Number, User: who.Login, Body: body,
		CreatedAt: now, UpdatedAt: now, ViaApp: who.ViaApp}
	rp.AddComment(cm)
	is.Comments++
	is.UpdatedAt = now
	rn := s.renderer(w)
	s.emit(w, "issue_comment", "created", rp, who.Login, obj{"issue": rn.Issue(rp, is), "comment": rn.Comment(rp, cm)})
	return cm, nil
}
