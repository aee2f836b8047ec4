// Package ledger is the work-item ledger: the record kept in each issue's status
// comment, the state machine it moves through, and the in-memory index rebuilt from
// GitHub at start-up. It knows nothing of go-github: the App's adapters translate.
package ledger

import (
	"fmt"
	"sort"
)

// State is where a work item is. The issue carries it as exactly one `bumper:<state>`
// label, and the status comment's record names it too.
type State string

// The states of a work item. Error is not part of the normal flow: it marks a record
// that could not be trusted (unparsable, or contradicting GitHub), so a human looks.
const (
	Requested        State = "requested"
	Planning         State = "planning"
	AwaitingApproval State = "awaiting-approval"
	Running          State = "running"
	Verifying        State = "verifying"
	Reviewing        State = "reviewing"
	InReview         State = "in-review"
	Done             State = "done"
	Failed           State = "failed"
	Stopped          State = "stopped"
	Error            State = "error"
)

// LabelPrefix starts every state label.
const LabelPrefix = "bumper:"

// Label is the issue label that shows the state.
func (s State) Label() string { return LabelPrefix + string(s) }

// States lists every state, in flow order.
func States() []State {
	return []State{Requested, Planning, AwaitingApproval, Running, Verifying, Reviewing,
		InReview, Done, Failed, Stopped, Error}
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Terminal reports whether no run may start from s without a human re-labelling or
// asking for /retry.
func (s State) Terminal() bool { return s == Done || s == Failed || s == Stopped || s == Error }

// Active reports whether a run may be under way in s.
func (s State) Active() bool {
	return s == Planning || s == Running || s == Verifying || s == Reviewing
}

// transitions is the one table of legal moves. Anything not listed is refused. Every
// non-terminal state may stop, fail or fall into the error state; those are spelled
// out rather than implied so the table can be read on its own.
var transitions = map[State][]State{
	// Labelled: either a plan run first, or straight to the approval ask.
	Requested: {Planning, AwaitingApproval, Stopped, Failed, Error},
	// The plan run posts its plan and hands over to the approvers.
	Planning: {AwaitingApproval, Stopped, Failed, Error},
	// /approve dispatches; with plans on, an edit asks for a new plan.
	AwaitingApproval: {Running, Planning, Stopped, Failed, Error},
	// A voided approval (edit, moved base) goes back to awaiting-approval. A run with no
	// verification commands hands its pull request over straight from running; a fix
	// round that fails hands it back to humans (in-review). A human may merge the pull
	// request whatever Bumper is doing on it.
	Running:   {Verifying, Reviewing, InReview, AwaitingApproval, Done, Stopped, Failed, Error},
	Verifying: {Running, Reviewing, InReview, AwaitingApproval, Done, Stopped, Failed, Error},
	Reviewing: {InReview, Done, Stopped, Failed, Error},
	// Fix, revise and update rounds go back to running; GitHub's update of the branch
	// that changed the pull request's diff hands the new head to a review run; merging
	// ends the item.
	InReview: {Running, Reviewing, Done, Stopped, Failed, Error},
	Done:     {},
	// /retry asks again; a fresh label starts over.
	Failed:  {AwaitingApproval, Requested},
	Stopped: {AwaitingApproval, Requested},
	// Only a human re-labelling recovers an untrusted record.
	Error: {Requested},
}

// CanTransition reports whether from → to is in the table.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ErrIllegalTransition is wrapped by Transition's refusals.
var ErrIllegalTransition = fmt.Errorf("illegal state transition")

// Transition checks from → to against the table and returns an error naming both when
// the move is not legal.
func Transition(from, to State) error {
	if !from.Valid() {
		return fmt.Errorf("%w: unknown state %q", ErrIllegalTransition, from)
	}
	if !CanTransition(from, to) {
		next := make([]string, 0, len(transitions[from]))
		for _, s := range transitions[from] {
			next = append(next, string(s))
		}
		sort.Strings(next)
		return fmt.Errorf("%w: %s → %s (from %s only %v are allowed)", ErrIllegalTransition, from, to, from, next)
	}
	return nil
}

// ParseState reads a state name, as found after the label prefix.
func ParseState(s string) (State, error) {
	st := State(s)
	if !st.Valid() {
		return "", fmt.Errorf("unknown work item state %q", s)
	}
	return st, nil
}
