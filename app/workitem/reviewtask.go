package workitem

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// findingAuthor is the author a finding of Bumper's reviewer carries in a task.
const findingAuthor = "bumper"

// readTask is what a round's inputs hold, read from GitHub: the words the agent gets,
// what it does not and why, and (when the inputs were split at the round's bound) what
// this round takes and what waits for the next.
type readTask struct {
	review  []wire.ReviewComment
	leftOut []wire.LeftOut
	inputs  []ledger.Input
	rest    []ledger.Input
	// texts are the bodies taken, for the note on what they hide.
	texts []string
	// waiting counts the comments left for the next round.
	waiting int
}

// reader reads the inputs of a round: the pull request's review comments once, and each
// author's permission once.
type reader struct {
	s        *Service
	gh       GitHub
	rec      *ledger.Record
	pol      repoconfig.Config
	bot      string
	comments []PullComment
	listed   bool
	perms    map[string]string
	out      readTask
	seen     map[int64]bool // comments taken or left out
	full     bool           // the round took wire.MaxReviewComments
}

// readInputs reads what inputs ask for, as GitHub has it now, keeping only writers'
// words as they were given: comments by people who may not give commands, by bots
// (Bumper's reviewer's, unless they are the findings a round was asked to answer), and
// edited after their review was submitted (or their /revise given) are left out, with
// why. A round takes at most wire.MaxReviewComments comments: with split, the inputs
// past that are split off to wait for the next round (rest); without, they are left out.
func (s *Service) readInputs(ctx context.Context, gh GitHub, rec *ledger.Record, pol repoconfig.Config, inputs []ledger.Input, split bool) (readTask, error) {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return readTask{}, err
	}
	r := &reader{s: s, gh: gh, rec: rec, pol: pol, bot: bot, perms: map[string]string{}, seen: map[int64]bool{}}
	for i, in := range inputs {
		if r.full && split {
			r.out.rest = append(r.out.rest, inputs[i:]...)
			for _, w := range inputs[i:] {
				n, err := r.count(ctx, w)
				if err != nil {
					return readTask{}, err
				}
				r.out.waiting += n
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
			return readTask{}, err
		}
	}
	return r.out, nil
}

// take adds a comment to the round, if it has room.
func (r *reader) take(c wire.ReviewComment) bool {
	if len(r.out.review) >= wire.MaxReviewComments {
		r.full = true
		return false
	}
	r.out.review = append(r.out.review, c)
	r.out.texts = append(r.out.texts, c.Body)
	r.seen[c.ID] = true
	return true
}

// leave records a comment that does not reach the agent, once.
func (r *reader) leave(id int64, author, association, reason string) {
	if id != 0 && r.seen[id] {
		return
	}
	r.seen[id] = true
	r.out.leftOut = append(r.out.leftOut, wire.LeftOut{ID: id, Author: author, Association: association, Reason: reason})
}

// writer says why an author's words may not reach the agent, "" when they may.
func (r *reader) writer(ctx context.Context, user, userType string) (string, error) {
	if strings.EqualFold(user, r.bot) || authz.IsBot(user, userType) {
		return wire.LeftOutBot, nil
	}
	key := strings.ToLower(user)
	perm, ok := r.perms[key]
	if !ok {
		var err error
		if perm, err = r.gh.Permission(ctx, r.rec.Repository, user); err != nil {
			return "", fmt.Errorf("failed to check the permission of %s on %s: %w", user, r.rec.Repository, err)
		}
		r.perms[key] = perm
	}
	if !authz.AtLeast(perm, r.pol.Approvers.MinPermission) {
		return wire.LeftOutNotWriter, nil
	}
	return "", nil
}

// pullComments lists the pull request's review comments, once.
func (r *reader) pullComments(ctx context.Context) ([]PullComment, error) {
	if !r.listed {
		cs, err := r.gh.PullComments(ctx, r.rec.Repository, r.rec.PullRequest)
		if err != nil {
			return nil, fmt.Errorf("failed to list the review comments of pull request #%d: %w", r.rec.PullRequest, err)
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
	rv, err := r.gh.Review(ctx, r.rec.Repository, r.rec.PullRequest, in.ID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read review %d of pull request #%d: %w", in.ID, r.rec.PullRequest, err)
	}
	finding := in.Kind == wire.ReviewKindFinding
	author := rv.User
	if finding {
		if !strings.EqualFold(rv.User, r.bot) {
			// Only the App's own review holds its reviewer's findings.
			r.leave(rv.ID, rv.User, rv.Association, wire.LeftOutNotWriter)
			r.out.inputs = append(r.out.inputs, in)
			return nil
		}
		author = findingAuthor
	} else if why, err := r.writer(ctx, rv.User, rv.UserType); err != nil {
		return err
	} else if why != "" {
		r.leave(rv.ID, rv.User, rv.Association, why)
		r.out.inputs = append(r.out.inputs, in)
		cs, err := r.ofReview(ctx, in)
		for _, c := range cs {
			r.leave(c.ID, c.Author, c.Association, why)
		}
		return err
	}
	if in.After == 0 && strings.TrimSpace(rv.Body) != "" {
		switch {
		case textDigest(rv.Body) != in.Digest:
			r.leave(rv.ID, rv.User, rv.Association, wire.LeftOutEdited)
		case !r.take(wire.ReviewComment{ID: idUnlessFinding(rv.ID, finding), Kind: in.Kind, Author: author, CreatedAt: rv.SubmittedAt.UTC(), Body: rv.Body}):
			// No room left even for the review's body: all of it waits.
			r.out.rest = append(r.out.rest, in)
			cs, err := r.ofReview(ctx, in)
			r.out.waiting += len(cs) + 1
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
		r.out.rest = append(r.out.rest, rest)
		r.out.waiting += len(cs) - i
		break
	}
	r.out.inputs = append(r.out.inputs, taken)
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
func (r *reader) thread(ctx context.Context, c PullComment, rv ReviewInfo) (int64, []wire.ThreadComment, error) {
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
		mine := strings.EqualFold(p.Author, r.bot)
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
		r.out.texts = append(r.out.texts, p.Body)
	}
	return root, out, nil
}

// revise reads a writer's /revise comment: its text, unless it was edited since.
func (r *reader) revise(ctx context.Context, in ledger.Input) error {
	c, err := r.gh.Comment(ctx, r.rec.Repository, in.ID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read comment %d: %w", in.ID, err)
	}
	if why, err := r.writer(ctx, c.Author, c.AuthorType); err != nil {
		return err
	} else if why != "" {
		r.leave(c.ID, c.Author, "", why)
		r.out.inputs = append(r.out.inputs, in)
		return nil
	}
	cmd, ok := command.Parse(c.Body)
	if c.UpdatedAt.After(c.CreatedAt) || !ok || cmd.Kind != command.Revise {
		r.leave(c.ID, c.Author, "", wire.LeftOutEdited)
		r.out.inputs = append(r.out.inputs, in)
		return nil
	}
	if cmd.Text == "" {
		return nil
	}
	if !r.take(wire.ReviewComment{ID: c.ID, Kind: wire.ReviewKindRevise, Author: c.Author, CreatedAt: c.CreatedAt.UTC(), Body: cmd.Text}) {
		r.out.rest = append(r.out.rest, in)
		r.out.waiting++
		return nil
	}
	r.out.inputs = append(r.out.inputs, in)
	return nil
}
