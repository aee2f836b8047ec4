package ledger

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/wire"
)

// The conversation on the pull request, as the record keeps it: the writers' words a
// revise round answers (Input), those waiting for the next round (Record.Pending), the
// /steer words not delivered yet (Record.Steers), a base branch that moved while a run
// worked (Record.BaseMoved) and GitHub's update of the branch in flight
// (Record.Updating). The record holds references only (ids, digests): the words stay on
// GitHub, where the App reads them again when it hands a run its task, and a status
// comment must stay within GitHub's limit whatever they say.

// Bounds of the conversation's part of the record.
const (
	// MaxPending bounds Record.Pending: reviews, /revise comments and the reviewer's
	// findings waiting for the next round. Past it, a writer is told to wait.
	MaxPending = 6
	// MaxSteers bounds Record.Steers: /steer words not delivered yet.
	MaxSteers = 8
)

// Input is one thing a revise round answers: a writer's review (its body and inline
// comments), a /revise comment, or Bumper's reviewer's review of its findings.
type Input struct {
	// Kind is wire.ReviewKindReview, wire.ReviewKindRevise or wire.ReviewKindFinding.
	Kind string `json:"kind"`
	// ID is the review's id (a review or the reviewer's findings) or the issue comment's
	// (a /revise).
	ID int64 `json:"id"`
	// Digest is the SHA-256 of the review's body as it was submitted: GitHub keeps no
	// time of a review's edit, so an edit shows as another digest.
	Digest string `json:"digest,omitempty"`
	// After and Through bound the review's inline comments this input takes, by id
	// (exclusive, inclusive; 0: no bound): a review with more comments than a round
	// takes (wire.MaxReviewComments) is split, the rest waiting for the next round.
	// An input with After set leaves the review's body to the round that took it.
	After   int64 `json:"after,omitempty"`
	Through int64 `json:"through,omitempty"`
}

// Same reports whether two inputs ask for the same thing (a review or comment, whatever
// part of it each takes).
func (i Input) Same(o Input) bool { return i.Kind == o.Kind && i.ID == o.ID }

// SteerRef is a writer's /steer, kept until a run reports it delivered: the comment's
// id (its text is read from GitHub, or from serve's memory of the comment as it was
// given), who gave it and when, and the attempt that was working then (0: none), whose
// run gets it while it works; any later run gets it with its task.
type SteerRef struct {
	ID  int64     `json:"id"`
	By  string    `json:"by"`
	At  time.Time `json:"at"`
	For int       `json:"for,omitempty"`
}

// BranchUpdate is GitHub's update of the pull request's branch (update-branch) that the
// App asked for and whose new head it waits for: the head it merges into (From), the
// base head it merges (To), and the SHA-256 of the pull request's files and patches
// before, to tell whether the verdict on From still holds for the merge.
type BranchUpdate struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	Diff string    `json:"diff"`
	At   time.Time `json:"at"`
}

// validInputKinds are the kinds an Input may have.
var validInputKinds = []string{wire.ReviewKindReview, wire.ReviewKindRevise, wire.ReviewKindFinding}

// validateConversation checks the conversation's part of a stored record.
func (r *Record) validateConversation() error {
	if len(r.Pending) > MaxPending {
		return fmt.Errorf("status record holds %d pending inputs; at most %d", len(r.Pending), MaxPending)
	}
	if len(r.Steers) > MaxSteers {
		return fmt.Errorf("status record holds %d steers; at most %d", len(r.Steers), MaxSteers)
	}
	check := func(where string, in []Input) error {
		for _, i := range in {
			switch {
			case !slices.Contains(validInputKinds, i.Kind):
				return fmt.Errorf("status record %s input kind %q is unknown", where, i.Kind)
			case i.ID < 1:
				return fmt.Errorf("status record %s input has no id", where)
			case i.Digest != "" && !IsRevision(i.Digest):
				return fmt.Errorf("status record %s input digest is not a full-length sha256 revision", where)
			}
		}
		return nil
	}
	if err := check("pending", r.Pending); err != nil {
		return err
	}
	for _, a := range r.Attempts {
		if len(a.Inputs) > MaxPending+1 {
			return fmt.Errorf("status record attempt %d answers %d inputs; at most %d", a.Number, len(a.Inputs), MaxPending+1)
		}
		if err := check(fmt.Sprintf("attempt %d", a.Number), a.Inputs); err != nil {
			return err
		}
	}
	for _, s := range r.Steers {
		if s.ID < 1 || s.By == "" {
			return fmt.Errorf("status record steer %d names no comment or no author", s.ID)
		}
	}
	if u := r.Updating; u != nil && (u.From == "" || u.To == "" || !IsRevision(u.Diff)) {
		return fmt.Errorf("status record branch update names no heads or no full-length diff digest")
	}
	return nil
}

// ParseWorkBranch parses a Bumper work branch name, bumper/<issue>-<attempt>.
func ParseWorkBranch(ref string) (issue, attempt int, ok bool) {
	rest, ok := strings.CutPrefix(ref, "bumper/")
	if !ok {
		return 0, 0, false
	}
	is, at, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(is)
	a, err2 := strconv.Atoi(at)
	if err1 != nil || err2 != nil || i < 1 || a < 1 {
		return 0, 0, false
	}
	return i, a, true
}

// WorkBranchName is the branch an implement run pushes to: bumper/<issue>-<attempt>.
func WorkBranchName(issue, attempt int) string { return fmt.Sprintf("bumper/%d-%d", issue, attempt) }

// PullAttempt is the number of the attempt whose branch the pull request is (an
// implement run's, bumper/<issue>-<attempt>); rounds counted after it are the pull
// request's.
func (r *Record) PullAttempt() int {
	if _, n, ok := ParseWorkBranch(r.WorkBranch); ok {
		return n
	}
	return 0
}

// RoundsUsed counts the rounds of a stage on the current pull request; for updates,
// GitHub's updates of the branch the App asked for count too.
func (r *Record) RoundsUsed(stage wire.Stage) int {
	n := r.RoundsSince(r.PullAttempt(), stage)
	if stage == wire.StageUpdate {
		n += r.BranchUpdates
	}
	return n
}

// RoundsSince counts the rounds of a stage on the current pull request: the attempts of
// that stage after attempt opened (the implement attempt whose branch the pull request
// is), leaving out those GitHub never started (their dispatch failed).
func (r *Record) RoundsSince(opened int, stage wire.Stage) int {
	n := 0
	for _, a := range r.Attempts {
		if a.Number > opened && a.Stage == stage && a.Outcome != OutcomeDispatchFailed {
			n++
		}
	}
	return n
}

// OutcomeDispatchFailed is the outcome of an attempt whose workflow_dispatch GitHub
// refused: its run never started.
const OutcomeDispatchFailed = "dispatch-failed"

// HasSteer reports whether the steer with this comment id is kept.
func (r *Record) HasSteer(id int64) bool {
	return slices.ContainsFunc(r.Steers, func(s SteerRef) bool { return s.ID == id })
}
