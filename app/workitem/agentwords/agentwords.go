// Package agentwords decides which people's words reach a run's agent, as GitHub has
// them now: the issue's comments a task carries, the review comments and /revise texts
// a revise round takes, and the /steer words a working run gets (Steers). Only writers'
// words reach it, as they were when they were
// given; the rest is left out, and a round says what and why. It reads through Source,
// the little of GitHub it needs, so the rules can be read and tested on their own.
package agentwords

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/recordtrust"
)

// findingAuthor is the author a finding of Bumper's reviewer carries in a task.
const findingAuthor = "bumper"

// Comment is an issue comment.
type Comment = recordtrust.Comment

// Review is a pull request review.
type Review struct {
	ID       int64
	User     string
	UserType string
	// Association is GitHub's author_association: for people to read; permission
	// decides.
	Association string
	State       string
	CommitID    string
	Body        string
	SubmittedAt time.Time
}

// PullComment is a pull request review comment: one on a line of the diff, in a review
// (ReviewID), maybe answering a thread's first comment (InReplyTo).
type PullComment struct {
	ID          int64
	ReviewID    int64
	InReplyTo   int64
	Author      string
	AuthorType  string
	Association string
	Body        string
	Path        string
	Line        int
	StartLine   int
	Side        string // LEFT or RIGHT
	DiffHunk    string
	CommitID    string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Source reads a work item's words from GitHub: its repository, its issue and its pull
// request. found is false when the thing asked for does not exist (deleted, say).
type Source interface {
	// Permission is user's level on the repository (admin, maintain, write, …).
	Permission(ctx context.Context, user string) (string, error)
	// IssueComments lists the issue's comments.
	IssueComments(ctx context.Context) ([]Comment, error)
	// Comment reads one issue comment.
	Comment(ctx context.Context, id int64) (c Comment, found bool, err error)
	// Review reads one review of the pull request.
	Review(ctx context.Context, id int64) (r Review, found bool, err error)
	// PullComments lists the pull request's review comments, every review's.
	PullComments(ctx context.Context) ([]PullComment, error)
}

// Item names the work item the words are on, for the error messages, and who may speak
// to the agent.
type Item struct {
	// ID is the work item's, "owner/name#n".
	ID string
	// Repository ("owner/name") and PullRequest (its number, for a round).
	Repository  string
	PullRequest int
	// Bot is the App's own login: its words are Bumper's, never a person's.
	Bot string
	// MinPermission is the least permission whose words a round takes (the policy's
	// approvers.min_permission).
	MinPermission string
}

// Digest is the digest of a review's body as the record binds it (a browser's CRLF
// does not read as an edit).
func Digest(body string) string {
	return ledger.ContentRevision([]byte(strings.ReplaceAll(body, "\r\n", "\n")))
}

// TaskComments are the issue comments a run may read: written by a person with write
// permission, before the cutoff (and before the approval comment itself, when
// approvalComment is not 0), not edited since, and not a command or one of Bumper's
// own.
func TaskComments(ctx context.Context, src Source, at Item, cutoff time.Time, approvalComment int64) ([]wire.TaskComment, error) {
	comments, err := src.IssueComments(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to list the comments of %s: %w", at.ID, err)
	}
	// GitHub's own time of the approval comment is the cutoff: the App's clock may be
	// skewed, and it handled the comment a moment after it was written.
	for _, c := range comments {
		if approvalComment != 0 && c.ID == approvalComment && c.CreatedAt.Before(cutoff) {
			cutoff = c.CreatedAt
		}
	}
	perms := map[string]string{}
	out := []wire.TaskComment{}
	for _, c := range comments {
		switch {
		case strings.EqualFold(c.Author, at.Bot), authz.IsBot(c.Author, c.AuthorType):
			continue
		case c.CreatedAt.After(cutoff), c.UpdatedAt.After(cutoff):
			continue
		case c.UpdatedAt.After(c.CreatedAt) && !c.UpdatedAt.Before(cutoff):
			// Edited in the approval's second (GitHub's times are whole seconds): the
			// edit may have come after the approval.
			continue
		case approvalComment != 0 && c.ID >= approvalComment:
			continue
		}
		if _, isCmd := command.Parse(c.Body); isCmd {
			continue
		}
		key := strings.ToLower(c.Author)
		perm, ok := perms[key]
		if !ok {
			if perm, err = src.Permission(ctx, c.Author); err != nil {
				return nil, fmt.Errorf("failed to check the permission of %s on %s: %w", c.Author, at.Repository, err)
			}
			perms[key] = perm
		}
		if !authz.AtLeast(perm, "write") {
			continue
		}
		out = append(out, wire.TaskComment{Author: c.Author, CreatedAt: c.CreatedAt.UTC(), Body: c.Body})
	}
	return out, nil
}

// Round is what a round's inputs hold, read from GitHub: the words the agent gets,
// what it does not and why, and (when the inputs were split at the round's bound) what
// this round takes and what waits for the next.
type Round struct {
	Review  []wire.ReviewComment
	LeftOut []wire.LeftOut
	// Inputs are what the round answers; Rest what waits for the next one.
	Inputs []ledger.Input
	Rest   []ledger.Input
	// Texts are the bodies taken, for the note on what they hide.
	Texts []string
	// Waiting counts the comments left for the next round.
	Waiting int
}

// reader reads the inputs of a round: the pull request's review comments once, and each
// author's permission once.
type reader struct {
	src      Source
	at       Item
	comments []PullComment
	listed   bool
	perms    map[string]string
	out      Round
	seen     map[int64]bool // comments taken or left out
	full     bool           // the round took wire.MaxReviewComments
}

// ReadRound reads what inputs ask for, as GitHub has it now, keeping only writers'
// words as they were given: comments by people who may not give commands, by bots
// (Bumper's reviewer's, unless they are the findings a round was asked to answer), and
// edited after their review was submitted (or their /revise given) are left out, with
// why. A round takes at most wire.MaxReviewComments comments: with split, the inputs
// past that are split off to wait for the next round (Rest); without, they are left out.
func ReadRound(ctx context.Context, src Source, at Item, inputs []ledger.Input, split bool) (Round, error) {
	r := &reader{src: src, at: at, perms: map[string]string{}, seen: map[int64]bool{}}
	for i, in := range inputs {
		if r.full && split {
			r.out.Rest = append(r.out.Rest, inputs[i:]...)
			for _, w := range inputs[i:] {
				n, err := r.count(ctx, w)
				if err != nil {
					return Round{}, err
				}
				r.out.Waiting += n
			}
			break
		}
		var err error
		switch in.Kind {
		case wire.ReviewKindReview, wire.ReviewKindFinding:
			err = r.review(ctx, in, split)
		case wire.ReviewKindRevise:
			err = r.revise(ctx, in)
		}
		if err != nil {
			return Round{}, err
		}
	}
	return r.out, nil
}

// take adds a comment to the round, if it has room.
func (r *reader) take(c wire.ReviewComment) bool {
	if len(r.out.Review) >= wire.MaxReviewComments {
		r.full = true
		return false
	}
	r.out.Review = append(r.out.Review, c)
	r.out.Texts = append(r.out.Texts, c.Body)
	r.seen[c.ID] = true
	return true
}

// leave records a comment that does not reach the agent, once.
func (r *reader) leave(id int64, author, association, reason string) {
	if id != 0 && r.seen[id] {
		return
	}
	r.seen[id] = true
	r.out.LeftOut = append(r.out.LeftOut, wire.LeftOut{ID: id, Author: author, Association: association, Reason: reason})
}

// writer says why an author's words may not reach the agent, "" when they may.
func (r *reader) writer(ctx context.Context, user, userType string) (string, error) {
	if strings.EqualFold(user, r.at.Bot) || authz.IsBot(user, userType) {
		return wire.LeftOutBot, nil
	}
	key := strings.ToLower(user)
	perm, ok := r.perms[key]
	if !ok {
		var err error
		if perm, err = r.src.Permission(ctx, user); err != nil {
			return "", fmt.Errorf("failed to check the permission of %s on %s: %w", user, r.at.Repository, err)
		}
		r.perms[key] = perm
	}
	if !authz.AtLeast(perm, r.at.MinPermission) {
		return wire.LeftOutNotWriter, nil
	}
	return "", nil
}

// pullComments lists the pull request's review comments, once.
func (r *reader) pullComments(ctx context.Context) ([]PullComment, error) {
	if !r.listed {
		cs, err := r.src.PullComments(ctx)
		if err != nil {
			return nil, fmt.Errorf("failed to list the review comments of pull request #%d: %w", r.at.PullRequest, err)
		}
		slices.SortFunc(cs, func(a, b PullComment) int { return cmp.Compare(a.ID, b.ID) })
		r.comments, r.listed = cs, true
	}
	return r.comments, nil
}

// ofReview lists a review's inline comments within the input's bounds, oldest first.
func (r *reader) ofReview(ctx context.Context, in ledger.Input) ([]PullComment, error) {
	all, err := r.pullComments(ctx)
	if err != nil {
		return nil, err
	}
	var out []PullComment
	for _, c := range all {
		if c.ReviewID == in.ID && c.ID > in.After && (in.Through == 0 || c.ID <= in.Through) {
			out = append(out, c)
		}
	}
	return out, nil
}

// count says how many comments an input would add to a round, for the reply.
func (r *reader) count(ctx context.Context, in ledger.Input) (int, error) {
	if in.Kind == wire.ReviewKindRevise {
		return 1, nil
	}
	cs, err := r.ofReview(ctx, in)
	if in.After == 0 {
		return len(cs) + 1, err
	}
	return len(cs), err
}

// review reads a writer's review (or, for a finding input, Bumper's reviewer's review of
// its findings): its body and its inline comments, each with the thread it answers.
func (r *reader) review(ctx context.Context, in ledger.Input, split bool) error {
	rv, found, err := r.src.Review(ctx, in.ID)
	if err != nil {
		return fmt.Errorf("failed to read review %d of pull request #%d: %w", in.ID, r.at.PullRequest, err)
	}
	if !found {
		return nil
	}
	finding := in.Kind == wire.ReviewKindFinding
	author := rv.User
	if finding {
		if !strings.EqualFold(rv.User, r.at.Bot) {
			// Only the App's own review holds its reviewer's findings.
			r.leave(rv.ID, rv.User, rv.Association, wire.LeftOutNotWriter)
			r.out.Inputs = append(r.out.Inputs, in)
			return nil
		}
		author = findingAuthor
	} else if why, err := r.writer(ctx, rv.User, rv.UserType); err != nil {
		return err
	} else if why != "" {
		r.leave(rv.ID, rv.User, rv.Association, why)
		r.out.Inputs = append(r.out.Inputs, in)
		cs, err := r.ofReview(ctx, in)
		for _, c := range cs {
			r.leave(c.ID, c.Author, c.Association, why)
		}
		return err
	}
	if in.After == 0 && strings.TrimSpace(rv.Body) != "" {
		switch {
		case Digest(rv.Body) != in.Digest:
			r.leave(rv.ID, rv.User, rv.Association, wire.LeftOutEdited)
		case !r.take(wire.ReviewComment{ID: idUnlessFinding(rv.ID, finding), Kind: in.Kind, Author: author, CreatedAt: rv.SubmittedAt.UTC(), Body: rv.Body}):
			// No room left even for the review's body: all of it waits.
			r.out.Rest = append(r.out.Rest, in)
			cs, err := r.ofReview(ctx, in)
			r.out.Waiting += len(cs) + 1
			return err
		}
	}
	cs, err := r.ofReview(ctx, in)
	if err != nil {
		return err
	}
	taken := in
	for i, c := range cs {
		if c.UpdatedAt.After(rv.SubmittedAt) {
			r.leave(c.ID, c.Author, c.Association, wire.LeftOutEdited)
			continue
		}
		rc := wire.ReviewComment{ID: c.ID, Kind: wire.ReviewKindInline, Author: author, CreatedAt: c.CreatedAt.UTC(), Body: c.Body,
			Path: c.Path, Line: c.Line, StartLine: c.StartLine, Side: c.Side, DiffHunk: c.DiffHunk}
		if finding {
			rc.ID, rc.Kind = 0, wire.ReviewKindFinding
		}
		if rc.ThreadID, rc.Thread, err = r.thread(ctx, c, rv); err != nil {
			return err
		}
		if r.take(rc) {
			continue
		}
		if !split {
			for _, w := range cs[i:] {
				r.leave(w.ID, w.Author, w.Association, wire.LeftOutTooMany)
			}
			break
		}
		// The round is full: this review's comments from c on wait for the next one
		// (without its body, which this round took or left out).
		rest := in
		rest.After, taken.Through = c.ID-1, c.ID-1
		r.out.Rest = append(r.out.Rest, rest)
		r.out.Waiting += len(cs) - i
		break
	}
	r.out.Inputs = append(r.out.Inputs, taken)
	if !split && in.Through != 0 {
		// The round was split at its bound: the task names what waits for the next one.
		all, err := r.pullComments(ctx)
		for _, c := range all {
			if c.ReviewID == in.ID && c.ID > in.Through {
				r.leave(c.ID, c.Author, c.Association, wire.LeftOutTooMany)
			}
		}
		return err
	}
	return nil
}

// idUnlessFinding is a review's id in a task: a finding has none (wire.ReviewComment).
func idUnlessFinding(id int64, finding bool) int64 {
	if finding {
		return 0
	}
	return id
}

// thread is the thread an inline comment answers: its first comment's id, and the
// comments before it as far as they may reach the agent (writers' words as they were
// when the review was submitted, and Bumper's own); the others are left out.
func (r *reader) thread(ctx context.Context, c PullComment, rv Review) (int64, []wire.ThreadComment, error) {
	root := c.InReplyTo
	if root == 0 {
		root = c.ID
	}
	all, err := r.pullComments(ctx)
	if err != nil {
		return 0, nil, err
	}
	var out []wire.ThreadComment
	for _, p := range all {
		if p.ID >= c.ID || (p.ID != root && p.InReplyTo != root) {
			continue
		}
		mine := strings.EqualFold(p.Author, r.at.Bot)
		why := ""
		if !mine {
			if why, err = r.writer(ctx, p.Author, p.AuthorType); err != nil {
				return 0, nil, err
			}
		}
		if why == "" && p.UpdatedAt.After(rv.SubmittedAt) {
			why = wire.LeftOutEdited
		}
		if why != "" {
			r.leave(p.ID, p.Author, p.Association, why)
			continue
		}
		out = append(out, wire.ThreadComment{ID: p.ID, Author: p.Author, CreatedAt: p.CreatedAt.UTC(), Body: p.Body})
		r.out.Texts = append(r.out.Texts, p.Body)
	}
	return root, out, nil
}

// revise reads a writer's /revise comment: its text, unless it was edited since.
func (r *reader) revise(ctx context.Context, in ledger.Input) error {
	c, found, err := r.src.Comment(ctx, in.ID)
	if err != nil {
		return fmt.Errorf("failed to read comment %d: %w", in.ID, err)
	}
	if !found {
		return nil
	}
	if why, err := r.writer(ctx, c.Author, c.AuthorType); err != nil {
		return err
	} else if why != "" {
		r.leave(c.ID, c.Author, "", why)
		r.out.Inputs = append(r.out.Inputs, in)
		return nil
	}
	cmd, ok := command.Parse(c.Body)
	if c.UpdatedAt.After(c.CreatedAt) || !ok || cmd.Kind != command.Revise {
		r.leave(c.ID, c.Author, "", wire.LeftOutEdited)
		r.out.Inputs = append(r.out.Inputs, in)
		return nil
	}
	if cmd.Text == "" {
		return nil
	}
	if !r.take(wire.ReviewComment{ID: c.ID, Kind: wire.ReviewKindRevise, Author: c.Author, CreatedAt: c.CreatedAt.UTC(), Body: cmd.Text}) {
		r.out.Rest = append(r.out.Rest, in)
		r.out.Waiting++
		return nil
	}
	r.out.Inputs = append(r.out.Inputs, in)
	return nil
}
