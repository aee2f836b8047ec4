package workitem

import (
	"github.com/bumperdev/bumper/app/workitem/runidentity"
	"github.com/bumperdev/bumper/app/workitem/runnerrefusal"
)

// Identity is what a runner's verified Actions OIDC token says about the run presenting
// it (runidentity.Identity); the HTTP layer (app/runnerapi) fills it in.
type Identity = runidentity.Identity

// Refusal refuses a runner's request for a reason the runner is told (runnerrefusal.Refusal);
// the HTTP layer answers it 403 and audits it. Any other error is the App's own failure.
type Refusal = runnerrefusal.Refusal

// RefusalKind is what a refusal is about (runnerrefusal.Kind).
type RefusalKind = runnerrefusal.Kind

// Refuse makes a refusal of a kind, with its reason as fmt.Sprintf makes it.
func Refuse(kind RefusalKind, format string, args ...any) *Refusal {
	return runnerrefusal.New(kind, format, args...)
}

// refuse is Refuse as an error, for this package's returns.
func refuse(kind RefusalKind, format string, args ...any) error {
	return Refuse(kind, format, args...)
}

// The kinds of refusal, as package runnerrefusal documents them.
const (
	RefusalBadRequest    = runnerrefusal.BadRequest
	RefusalOIDC          = runnerrefusal.OIDC
	RefusalRunToken      = runnerrefusal.RunToken
	RefusalIdentity      = runnerrefusal.Identity
	RefusalUnknownItem   = runnerrefusal.UnknownItem
	RefusalAttempt       = runnerrefusal.Attempt
	RefusalNonce         = runnerrefusal.Nonce
	RefusalApproval      = runnerrefusal.Approval
	RefusalState         = runnerrefusal.State
	RefusalStage         = runnerrefusal.Stage
	RefusalInvalidReport = runnerrefusal.InvalidReport
	RefusalPolicy        = runnerrefusal.Policy
	RefusalDependency    = runnerrefusal.Dependency
	RefusalBudget        = runnerrefusal.Budget
	RefusalPaused        = runnerrefusal.Paused
)

// RefusalKinds lists every kind.
func RefusalKinds() []RefusalKind { return runnerrefusal.Kinds() }
