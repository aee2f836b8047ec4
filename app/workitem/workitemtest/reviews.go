package workitemtest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/workitem"
)

// Pull request reviews and review comments as GitHub keeps them: every review comment
// belongs to a review (a single comment and a reply in a thread each make a review of
// their own, in state COMMENTED), a reply answers its thread's first comment
// (in_reply_to_id), and a person's review is delivered as one pull_request_review
// "submitted" webhook, whose payload holds the review but not its comments.

// pullComment is a review comment.
type pullComment struct {
	workitem.PullComment
	number int
}

// Inline is an inline comment of a person's review: on a line of the diff, or a reply
// to a thread (InReplyTo, the id of any comment of it).
type Inline struct {
	Path      string
	Line      int
	Side      string // RIGHT by default
	Body      string
	InReplyTo int64
}

// association is what GitHub's author_association says of a user here: a collaborator
// (of any level), or none. Bumper decides by permission; this is for people to read.
func (r *repo) association(user string) string {
	if _, ok := r.perms[strings.ToLower(user)]; ok {
		return "COLLABORATOR"
	}
	return "NONE"
}

// Review has user submit a review of pull request number (state CHANGES_REQUESTED,
// COMMENTED or APPROVED) with a body and inline comments, of its current head, and
// returns the pull_request_review "submitted" event GitHub delivers and the review's
// id. The comments' ids are the review's comments in order (CommentsOf).
func (g *GitHub) Review(repoName string, number int, user, state, body string, inline ...Inline) (workitem.ReviewEvent, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	return g.review(r, number, user, state, body, "", inline)
}

// ReviewOf is Review of another commit than the head (an older one, as a reviewer
// whose page was not reloaded submits it).
func (g *GitHub) ReviewOf(repoName string, number int, commit, user, state, body string, inline ...Inline) (workitem.ReviewEvent, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.review(g.must(repoName), number, user, state, body, commit, inline)
}

func (g *GitHub) review(r *repo, number int, user, state, body, commit string, inline []Inline) (workitem.ReviewEvent, int64) {
	is, ok := r.issues[number]
	if !ok || is.pull == nil {
		panic(fmt.Sprintf("workitemtest: %s#%d is not a pull request", r.name, number))
	}
	if state != "APPROVED" && strings.TrimSpace(body) == "" && len(inline) == 0 {
		panic("workitemtest: GitHub refuses a review without a body or comments (422)")
	}
	if commit == "" {
		commit = is.pull.HeadSHA
	}
	id, now := g.id(), g.now()
	lines := diffLines(r.files[number])
	var comments []workitem.ReviewComment
	for _, in := range inline {
		c := workitem.PullComment{ID: g.id(), ReviewID: id, Author: user, AuthorType: userType(user), Association: r.association(user),
			Body: in.Body, CommitID: commit, CreatedAt: now, UpdatedAt: now}
		if in.InReplyTo != 0 {
			root := r.pullComment(in.InReplyTo)
			if root == nil || root.number != number {
				panic(fmt.Sprintf("workitemtest: no review comment %d on %s#%d (404)", in.InReplyTo, r.name, number))
			}
			if root.InReplyTo != 0 {
				root = r.pullComment(root.InReplyTo)
			}
			c.InReplyTo, c.Path, c.Line, c.Side, c.DiffHunk = root.ID, root.Path, root.Line, root.Side, root.DiffHunk
		} else {
			if in.Side == "" {
				in.Side = "RIGHT"
			}
			if !lines[diffLine{in.Path, in.Side, in.Line}] {
				panic(fmt.Sprintf("workitemtest: Line could not be resolved: %s:%d (%s) (422)", in.Path, in.Line, in.Side))
			}
			c.Path, c.Line, c.Side, c.DiffHunk = in.Path, in.Line, in.Side, hunkOf(r.files[number], in.Path)
		}
		r.prComments = append(r.prComments, &pullComment{PullComment: c, number: number})
		comments = append(comments, workitem.ReviewComment{Path: c.Path, Line: c.Line, Side: c.Side, Body: c.Body})
	}
	rv := Review{ID: id, User: user, UserType: userType(user), Association: r.association(user), State: state, CommitID: commit,
		Body: body, SubmittedAt: now, Comments: comments}
	r.reviews[number] = append(r.reviews[number], rv)
	ev := workitem.ReviewEvent{Delivery: g.nextDelivery(), Action: "submitted", Repo: r.view(), Number: number, HeadRef: is.pull.HeadRef,
		Review: rv.info()}
	return ev, id
}

// hunkOf is the diff hunk GitHub shows above a comment on a file: the file's patch, as
// far as the fake knows it.
func hunkOf(files []workitem.PullFile, path string) string {
	for _, f := range files {
		if f.Path == path {
			return f.Patch
		}
	}
	return ""
}

// pullComment finds a review comment; the caller holds mu.
func (r *repo) pullComment(id int64) *pullComment {
	for _, c := range r.prComments {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// CommentsOf lists the ids of a review's comments, oldest first.
func (g *GitHub) CommentsOf(repoName string, reviewID int64) []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int64
	for _, c := range g.must(repoName).prComments {
		if c.ReviewID == reviewID {
			out = append(out, c.ID)
		}
	}
	return out
}

// EditReviewComment changes a review comment's body, as its author can, after its
// review was submitted (GitHub sends pull_request_review_comment "edited").
func (g *GitHub) EditReviewComment(repoName string, id int64, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.must(repoName).pullComment(id)
	if c == nil {
		panic(fmt.Sprintf("workitemtest: no review comment %d", id))
	}
	c.Body, c.UpdatedAt = body, g.now()
}

// EditReview changes a submitted review's body, as its author can (GitHub keeps no time
// of it; it sends pull_request_review "edited").
func (g *GitHub) EditReview(repoName string, number int, id int64, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rs := g.must(repoName).reviews[number]
	for i := range rs {
		if rs[i].ID == id {
			rs[i].Body = body
			return
		}
	}
	panic(fmt.Sprintf("workitemtest: no review %d on #%d", id, number))
}

// PullCommentsOn lists every review comment on a pull request, as anyone sees them.
func (g *GitHub) PullCommentsOn(repoName string, number int) []workitem.PullComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []workitem.PullComment
	for _, c := range g.must(repoName).prComments {
		if c.number == number {
			out = append(out, c.PullComment)
		}
	}
	return out
}

func (rv Review) info() workitem.ReviewInfo {
	return workitem.ReviewInfo{ID: rv.ID, User: rv.User, UserType: rv.UserType, Association: rv.Association, State: rv.State,
		CommitID: rv.CommitID, Body: rv.Body, SubmittedAt: rv.SubmittedAt}
}

// Review implements workitem.GitHub.
func (c client) Review(_ context.Context, repoName string, number int, id int64) (workitem.ReviewInfo, error) {
	r, unlock, err := c.call("Review", repoName)
	if err != nil {
		return workitem.ReviewInfo{}, err
	}
	defer unlock()
	for _, rv := range r.reviews[number] {
		if rv.ID == id {
			return rv.info(), nil
		}
	}
	return workitem.ReviewInfo{}, notFound("review %d of %s#%d", id, repoName, number)
}

// PullComments implements workitem.GitHub: oldest first.
func (c client) PullComments(_ context.Context, repoName string, number int) ([]workitem.PullComment, error) {
	r, unlock, err := c.call("PullComments", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if is, ok := r.issues[number]; !ok || is.pull == nil {
		return nil, notFound("pull request %s#%d", repoName, number)
	}
	var out []workitem.PullComment
	for _, pc := range r.prComments {
		if pc.number == number {
			out = append(out, pc.PullComment)
		}
	}
	return out, nil
}

// reviewComments stores the App's review's inline comments as review comments; the
// caller holds mu.
func (g *GitHub) reviewComments(r *repo, number int, reviewID int64, commit string, rv workitem.Review) {
	now := g.now()
	for _, cm := range rv.Comments {
		r.prComments = append(r.prComments, &pullComment{number: number, PullComment: workitem.PullComment{ID: g.id(), ReviewID: reviewID,
			Author: g.opts.Bot, AuthorType: "Bot", Association: "NONE", Body: cm.Body, Path: cm.Path, Line: cm.Line, Side: cm.Side,
			DiffHunk: hunkOf(r.files[number], cm.Path), CommitID: commit, CreatedAt: now, UpdatedAt: now}})
	}
}
