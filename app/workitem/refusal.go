package workitem

import "fmt"

// Identity is what a runner's verified Actions OIDC token says about the run presenting
// it; the HTTP layer (app/runnerapi) verifies the token and fills it in.
type Identity struct {
	Repository  string
	WorkflowRef string // owner/repo/.github/workflows/file.yml@refs/heads/main
	Ref         string
	SHA         string
	RunID       string
	EventName   string
	Actor       string
}

// Refusal refuses a runner's request for a reason the runner is told; the HTTP layer
// answers it 403 and audits it. Any other error is the App's own failure. Its kind is
// given where it is made (Refuse), never read back from its words.
type Refusal struct {
	kind   RefusalKind
	reason string
}

// Refuse makes a refusal of a kind, with its reason as fmt.Sprintf makes it.
func Refuse(kind RefusalKind, format string, args ...any) *Refusal {
	return &Refusal{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// refuse is Refuse as an error, for this package's returns.
func refuse(kind RefusalKind, format string, args ...any) error {
	return Refuse(kind, format, args...)
}

// Kind is the refusal's kind, one of the Refusal* constants.
func (r *Refusal) Kind() RefusalKind { return r.kind }

// Reason says why, for the runner and the audit log.
func (r *Refusal) Reason() string { return r.reason }

func (r *Refusal) Error() string { return "refused: " + r.reason }

// RefusalKind is what a refusal is about: a small fixed set, so that a metric labelled
// with one has a bounded number of series whatever a runner sends.
type RefusalKind string

// The kinds of refusal. The token exchange's metric label is the kind as it is written
// here (docs/operating.md lists them).
const (
	// RefusalBadRequest: the request names no work item that can exist.
	RefusalBadRequest RefusalKind = "bad_request"
	// RefusalOIDC: the runner's OIDC token did not verify (the HTTP layer's).
	RefusalOIDC RefusalKind = "oidc"
	// RefusalRunToken: a call-back came without a run token, or with one that does not
	// verify (the HTTP layer's; no token exchange has it).
	RefusalRunToken RefusalKind = "run_token"
	// RefusalIdentity: the OIDC token is for another repository, event, workflow, ref
	// or run than the work item's dispatch.
	RefusalIdentity RefusalKind = "identity"
	// RefusalUnknownItem: the App is not installed there, or the issue has no work item.
	RefusalUnknownItem RefusalKind = "unknown_item"
	// RefusalAttempt: the request is for an attempt that is not the current one.
	RefusalAttempt RefusalKind = "attempt"
	// RefusalNonce: the nonce is wrong or was already used (a replay).
	RefusalNonce RefusalKind = "nonce"
	// RefusalApproval: the approval no longer holds (the issue, the plan, the policy,
	// the approval comment or the base moved since).
	RefusalApproval RefusalKind = "approval"
	// RefusalState: the work item's state allows no such request (no run may start, the
	// run is over, the pull request is not the one the run was dispatched for).
	RefusalState RefusalKind = "state"
	// RefusalStage: the run's stage may not do this (a plan run posting evidence, a
	// token's scope without the endpoint, say).
	RefusalStage RefusalKind = "stage"
	// RefusalInvalidReport: a run's report does not hold up (a malformed digest, a pull
	// request that is not the run's).
	RefusalInvalidReport RefusalKind = "invalid_report"
	// RefusalPolicy: the repository's policy at the base commit, which a report needs,
	// cannot be read (no token exchange has it: there, the approval is voided instead).
	RefusalPolicy RefusalKind = "policy"
	// RefusalDependency: a repository the policy lists under dependencies.repositories
	// cannot be granted (the App is not installed on it, the approver cannot read it, it
	// is the run's own or another owner's); the approval is voided, saying what to do.
	RefusalDependency RefusalKind = "dependency"
	// RefusalBudget: the work item's model budget (bounds.cost_per_item_usd) is spent
	// by its earlier runs; the item fails, saying so.
	RefusalBudget RefusalKind = "budget"
	// RefusalPaused: serve's configuration or the repository's file pauses Bumper; the
	// item waits, its approval kept.
	RefusalPaused RefusalKind = "paused"
)

// RefusalKinds lists every kind.
func RefusalKinds() []RefusalKind {
	return []RefusalKind{RefusalBadRequest, RefusalOIDC, RefusalRunToken, RefusalIdentity, RefusalUnknownItem,
		RefusalAttempt, RefusalNonce, RefusalApproval, RefusalState, RefusalStage, RefusalInvalidReport, RefusalPolicy, RefusalDependency, RefusalBudget, RefusalPaused}
}
