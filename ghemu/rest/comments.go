package rest

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// maxCommentBody is GitHub's limit on a comment's length.
const maxCommentBody = 65536

func (c *call) comment() (*state.Comment, error) {
	id, err := strconv.ParseInt(c.params["comment_id"], 10, 64)
	if err != nil {
		return nil, apierr.NotFound()
	}
	cm := c.repo.Comment(id)
	if cm == nil {
		return nil, apierr.NotFound()
	}
	return cm, nil
}

func (a *API) listComments(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	since, err := sinceFilter(r, "IssueComment")
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var list []*state.Comment
	for _, cm := range c.repo.Comments(is.Number) {
		if !cm.UpdatedAt.Before(since) {
			list = append(list, cm)
		}
	}
	writeList(c, w, r, list, func(cm *state.Comment) obj { return c.rn.Comment(c.repo, cm) })
}

func commentBody(r *http.Request) (string, error) {
	var req struct {
		Body *string `json:"body"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		return "", err
	}
	if req.Body == nil || strings.TrimSpace(*req.Body) == "" {
		return "", apierr.Validation("IssueComment", "body", "missing_field", "body is required")
	}
	if len(*req.Body) > maxCommentBody {
		return "", apierr.Validation("IssueComment", "body", "custom", "Body is too long (maximum is 65536 characters)")
	}
	return *req.Body, nil
}

func (a *API) createComment(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	body, err := commentBody(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	cm, err := a.conv.Comment(c.st, c.repo, is, c.actorOf(), body)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusCreated, c.rn.Comment(c.repo, cm))
}

func (a *API) getComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, err := c.comment()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Comment(c.repo, cm))
}

// mayEditComment: authors may edit their own comments, the App (which already passed
// the issues-write check) any, and users with write access any.
func (c *call) mayEditComment(cm *state.Comment) bool {
	if c.who.token != nil || state.Key(cm.User) == state.Key(c.who.actor()) {
		return true
	}
	return state.RoleAtLeast(c.repo.Role(c.who.user), "write")
}

func (a *API) editComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, err := c.comment()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if !c.mayEditComment(cm) {
		apierr.Write(w, apierr.New(http.StatusForbidden, "You cannot edit this comment."))
		return
	}
	body, err := commentBody(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if body == cm.Body {
		apierr.WriteJSON(w, http.StatusOK, c.rn.Comment(c.repo, cm))
		return
	}
	from := cm.Body
	cm.Body = body
	cm.UpdatedAt = c.st.Timestamp()
	c.st.MarkChanged()
	rendered := c.rn.Comment(c.repo, cm)
	c.emit("issue_comment", "edited", c.repo, c.who.actor(), obj{
		"issue": c.rn.Issue(c.repo, c.repo.Issue(cm.IssueNumber)), "comment": rendered,
		"changes": obj{"body": obj{"from": from}}})
	apierr.WriteJSON(w, http.StatusOK, rendered)
}

func (a *API) deleteComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, err := c.comment()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if !c.mayEditComment(cm) {
		apierr.Write(w, apierr.New(http.StatusForbidden, "You cannot delete this comment."))
		return
	}
	c.repo.DeleteComment(cm.ID)
	if is := c.repo.Issue(cm.IssueNumber); is != nil {
		is.Comments--
	}
	w.WriteHeader(http.StatusNoContent)
}
