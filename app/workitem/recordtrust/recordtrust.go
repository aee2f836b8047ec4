// Package recordtrust decides whether a work item's record, read back from its status
// comment, can be trusted: the one status comment is the App's own, its signature holds,
// it names its issue, its state matches the one state label, every approval
// that holds points at an /approve its approver wrote, and the comment was not written
// back with an older record. GitHub is the store, and anyone with write access can edit
// labels and delete comments; what does not hold puts the item in the error state.
package recordtrust

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
)

// Comment is an issue comment, as the checks read it.
type Comment struct {
	ID         int64
	Author     string
	AuthorType string // User, Bot, Organization
	Body       string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Find finds the status comment of issue id among its comments and checks the record
// against GitHub: exactly one state label (of the labels) matching the record,
// the bot as the comment's author, and approvals that point at comments their approvers
// wrote. commentID is the status comment's, when there is one: the error state is
// written there.
func Find(sealer *ledger.Sealer, id string, labels []string, comments []Comment, bot string) (rec *ledger.Record, commentID int64, err error) {
	var states []string
	for _, l := range labels {
		if strings.HasPrefix(l, ledger.LabelPrefix) {
			states = append(states, l)
		}
	}
	var status []Comment
	for _, c := range comments {
		if ledger.IsStatusComment(c.Body) {
			status = append(status, c)
		}
	}
	var mine []Comment
	for _, c := range status {
		if strings.EqualFold(c.Author, bot) {
			mine = append(mine, c)
		}
	}
	switch {
	case len(mine) == 0 && len(status) > 0:
		return nil, 0, fmt.Errorf("the status comment was written by @%s, not by Bumper", status[0].Author)
	case len(mine) == 0:
		return nil, 0, errors.New("the issue carries a state label but has no status comment")
	case len(mine) > 1:
		return nil, mine[0].ID, fmt.Errorf("the issue has %d status comments; there must be one", len(mine))
	}
	commentID = mine[0].ID
	rec, err = Trusted(sealer, id, mine[0], comments)
	if err != nil {
		return rec, commentID, err
	}
	if len(states) != 1 || !strings.EqualFold(states[0], rec.State.Label()) {
		return rec, commentID, &LabelError{State: rec.State, Labels: states}
	}
	return rec, commentID, nil
}

// LabelError is a trusted record whose issue does not carry its state's one label.
type LabelError struct {
	State  ledger.State // the record's
	Labels []string     // the state labels
}

func (e *LabelError) Error() string {
	return fmt.Sprintf("the record says %s but the issue's state labels are %v", e.State, e.Labels)
}

// Interrupted reports whether the labels are what a write that stopped halfway leaves:
// Bumper writes the status comment first and moves the label after (adding the new
// label, then removing the old), so a replica killed in between (or a label write GitHub
// failed) leaves the label of a state from which the record's state is a legal move,
// alone or beside the record's own, and not one out of an ended state. The signed record
// is the item's state; the label only shows it, and is put right. Anything else (a
// label of a state the record cannot have come from, two labels neither of which is the
// record's, three) is not Bumper's own doing, and a person looks.
func (e *LabelError) Interrupted() (from ledger.State, ok bool) {
	var others []ledger.State
	for _, l := range e.Labels {
		if st := ledger.State(strings.TrimPrefix(strings.ToLower(l), ledger.LabelPrefix)); st != e.State {
			others = append(others, st)
		}
	}
	if len(others) != 1 || len(e.Labels) > 2 {
		return "", false
	}
	from = others[0]
	// Not out of an ended state: a record written back over a /stop (an older, signed
	// record, within the clock-skew window notEditedSince allows) would look the same,
	// and undoing a /stop is what the error state is there to show.
	if !from.Valid() || from.Terminal() || ledger.Transition(from, e.State) != nil {
		return "", false
	}
	return from, true
}

// Trusted reads the record out of the bot's status comment c and checks everything
// GitHub can confirm: the signature, the issue it names (id), the approvals against the
// issue's comments, and that the comment was not edited after the record was written.
// The record comes back with the error when it decoded, so the caller can tell an item
// already in the error state.
func Trusted(sealer *ledger.Sealer, id string, c Comment, comments []Comment) (*ledger.Record, error) {
	rec, err := sealer.Decode(c.Body)
	if err != nil {
		return nil, err
	}
	if rec.ID() != id {
		return nil, fmt.Errorf("the record names %s, not this issue", rec.ID())
	}
	if err := approvalsHold(rec, comments); err != nil {
		return rec, err
	}
	if err := notEditedSince(rec, c); err != nil {
		return rec, err
	}
	return rec, nil
}

// maxClockSkew bounds how much later than the record's own time GitHub may stamp the
// comment's last edit. GitHub App authentication already fails beyond a minute of skew.
const maxClockSkew = 5 * time.Minute

// notEditedSince refuses a status comment edited after Bumper wrote its record: an
// older, validly signed record written back (a replay, which could undo a /stop) shows
// as a comment edited long after the time the record carries.
func notEditedSince(rec *ledger.Record, c Comment) error {
	if !c.UpdatedAt.IsZero() && c.UpdatedAt.After(rec.UpdatedAt.Add(maxClockSkew)) {
		return fmt.Errorf("the status comment was edited at %s, after Bumper wrote its record (%s): an older record was written back",
			c.UpdatedAt.UTC().Format(time.RFC3339), rec.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// approvalsHold checks that every approval that still holds points at a comment its
// approver wrote, which gives /approve. Every approval is one (comment_id 0 is refused
// when the record is decoded); a voided one may point at a comment since deleted.
func approvalsHold(rec *ledger.Record, comments []Comment) error {
	byID := make(map[int64]Comment, len(comments))
	for _, c := range comments {
		byID[c.ID] = c
	}
	for _, a := range rec.Approvals {
		if a.Voided != "" {
			continue
		}
		c, ok := byID[a.CommentID]
		if !ok || !strings.EqualFold(c.Author, a.By) {
			return fmt.Errorf("the approval by @%s points at comment %d, which @%s did not write", a.By, a.CommentID, a.By)
		}
		if cmd, ok := command.Parse(c.Body); !ok || cmd.Kind != command.Approve {
			return fmt.Errorf("the approval by @%s points at comment %d, which does not say /approve", a.By, a.CommentID)
		}
	}
	return nil
}
