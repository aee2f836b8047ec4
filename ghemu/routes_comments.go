package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// maxCommentBody is GitHub's limit on a comment's length.
const maxCommentBody = 65536

func (c *call) comment() (*comment, error) {
	id, err := strconv.ParseInt(c.params["comment_id"], 10, 64)
	if err != nil {
		return nil, errNotFound()
	}
	cm := c.repo.Comments[id]
	if cm == nil {
		return nil, errNotFound()
	}
	return cm, nil
}

func (e *Emulator) listComments(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	since, err := sinceFilter(r, "IssueComment")
	if err != nil {
		writeError(w, err)
		return
	}
	var list []*comment
	for _, cm := range c.repo.Comments {
		if cm.IssueNumber == is.Number && !cm.UpdatedAt.Before(since) {
			list = append(list, cm)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writeList(e, w, r, list, func(cm *comment) obj { return e.renderComment(c.repo, cm) })
}

func commentBody(r *http.Request) (string, error) {
	var req struct {
		Body *string `json:"body"`
	}
	if err := decode(r, &req); err != nil {
		return "", err
	}
	if req.Body == nil || strings.TrimSpace(*req.Body) == "" {
		return "", errValidation("IssueComment", "body", "missing_field", "body is required")
	}
	if len(*req.Body) > maxCommentBody {
		return "", errValidation("IssueComment", "body", "custom", "Body is too long (maximum is 65536 characters)")
	}
	return *req.Body, nil
}

func (e *Emulator) createComment(w http.ResponseWriter, r *http.Request, c *call) {
	is, err := c.issue()
	if err != nil {
		writeError(w, err)
		return
	}
	body, err := commentBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if is.Locked && c.who.token == nil && !roleAtLeast(e.roleOf(c.who.user, c.repo), "write") {
		writeError(w, newError(http.StatusForbidden, "Unable to create comment because issue is locked."))
		return
	}
	now := e.timestamp()
	cm := &comment{ID: e.st.nextID(), IssueNumber: is.Number, User: c.who.actor(), Body: body,
		CreatedAt: now, UpdatedAt: now, ViaApp: c.who.token != nil}
	c.repo.Comments[cm.ID] = cm
	is.Comments++
	is.UpdatedAt = now
	c.mutated = true
	rendered := e.renderComment(c.repo, cm)
	e.emit("issue_comment", "created", c.repo, c.who.actor(),
		obj{"issue": e.renderIssue(c.repo, is), "comment": rendered})
	writeJSON(w, http.StatusCreated, rendered)
}

func (e *Emulator) getComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, err := c.comment()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderComment(c.repo, cm))
}

// mayEditComment: authors may edit their own comments, the App (which already passed
// the issues-write check) any, and users with write access any.
func (e *Emulator) mayEditComment(c *call, cm *comment) bool {
	if c.who.token != nil || key(cm.User) == key(c.who.actor()) {
		return true
	}
	return roleAtLeast(e.roleOf(c.who.user, c.repo), "write")
}

func (e *Emulator) editComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, err := c.comment()
	if err != nil {
		writeError(w, err)
		return
	}
	if !e.mayEditComment(c, cm) {
		writeError(w, newError(http.StatusForbidden, "You cannot edit this comment."))
		return
	}
	body, err := commentBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if body == cm.Body {
		writeJSON(w, http.StatusOK, e.renderComment(c.repo, cm))
		return
	}
	from := cm.Body
	cm.Body = body
	cm.UpdatedAt = e.timestamp()
	c.mutated = true
	rendered := e.renderComment(c.repo, cm)
	e.emit("issue_comment", "edited", c.repo, c.who.actor(), obj{
		"issue": e.renderIssue(c.repo, c.repo.Issues[cm.IssueNumber]), "comment": rendered,
		"changes": obj{"body": obj{"from": from}}})
	writeJSON(w, http.StatusOK, rendered)
}

func (e *Emulator) deleteComment(w http.ResponseWriter, r *http.Request, c *call) {
	cm, err := c.comment()
	if err != nil {
		writeError(w, err)
		return
	}
	if !e.mayEditComment(c, cm) {
		writeError(w, newError(http.StatusForbidden, "You cannot delete this comment."))
		return
	}
	delete(c.repo.Comments, cm.ID)
	if is := c.repo.Issues[cm.IssueNumber]; is != nil {
		is.Comments--
	}
	c.mutated = true
	w.WriteHeader(http.StatusNoContent)
}
