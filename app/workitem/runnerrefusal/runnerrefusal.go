// Package runnerrefusal is how the App refuses a runner's request: a refusal says why, for
// the runner and the audit log, and is of one of a small fixed set of kinds, so that a
// metric labelled with one has a bounded number of series whatever a runner sends.
package runnerrefusal

import "fmt"

// Refusal refuses a runner's request for a reason the runner is told; the HTTP layer
// answers it 403 and audits it. Any other error is the App's own failure. Its kind is
// given where it is made (New), never read back from its words.
type Refusal struct {
	kind   Kind
	reason string
}

// New makes a refusal of a kind, with its reason as fmt.Sprintf makes it.
func New(kind Kind, format string, args ...any) *Refusal {
	return &Refusal{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// Kind is the refusal's kind, one of the kinds below.
func (r *Refusal) Kind() Kind { return r.kind }

// Reason says why, for the runner and the audit log.
func (r *Refusal) Reason() string { return r.reason }

func (r *Refusal) Error() string { return "refused: " + r.reason }

// Kind is what a refusal is about: a small fixed set, so that a metric labelled
// with one has a bounded number of series whatever a runner sends.
type Kind string

// The kinds of refusal. The token exchange's metric label is the kind as it is written
// here (docs/operating.md lists them).
const (
	// BadRequest: the request names no work item that can exist.
	BadRequest Kind = "bad_request"
	// OIDC: the runner's OIDC token did not verify (the HTTP layer's).
	OIDC Kind = "oidc"
	// RunToken: a call-back came without a run token, or with one that does not
	// verify (the HTTP layer's; no token exchange has it).
	RunToken Kind = "run_token"
	// Identity: the OIDC token is for another repository, event, workflow, ref
	// or run than the work item's dispatch.
	Identity Kind = "identity"
	// UnknownItem: the App is not installed there, or the issue has no work item.
	UnknownItem Kind = "unknown_item"
	// Attempt: the request is for an attempt that is not the current one.
	Attempt Kind = "attempt"
	// Nonce: the nonce is wrong or was already used (a replay).
	Nonce Kind = "nonce"
	// Approval: the approval no longer holds (the issue, the plan, the policy,
	// the approval comment or the base moved since).
	Approval Kind = "approval"
	// State: the work item's state allows no such request (no run may start, the
	// run is over, the pull request is not the one the run was dispatched for).
	State Kind = "state"
	// Stage: the run's stage may not do this (a plan run posting evidence, a
	// token's scope without the endpoint, say).
	Stage Kind = "stage"
	// InvalidReport: a run's report does not hold up (a malformed digest, a pull
	// request that is not the run's).
	InvalidReport Kind = "invalid_report"
	// Policy: the repository's policy at the base commit, which a report needs,
	// cannot be read (no token exchange has it: there, the approval is voided instead).
	Policy Kind = "policy"
	// Dependency: a repository the policy lists under dependencies.repositories
	// cannot be granted (the App is not installed on it, the approver cannot read it, it
	// is the run's own or another owner's); the approval is voided, saying what to do.
	Dependency Kind = "dependency"
	// Budget: the work item's model budget (bounds.cost_per_item_usd) is spent
	// by its earlier runs; the item fails, saying so.
	Budget Kind = "budget"
	// Paused: serve's configuration or the repository's file pauses Bumper; the
	// item waits, its approval kept.
	Paused Kind = "paused"
)

// Kinds lists every kind.
func Kinds() []Kind {
	return []Kind{BadRequest, OIDC, RunToken, Identity, UnknownItem,
		Attempt, Nonce, Approval, State, Stage, InvalidReport, Policy, Dependency, Budget, Paused}
}
