package workitem

import "strings"

// The kinds of refusal (Refusal.Kind): a small fixed set, so a metric labelled with one
// has a bounded number of series whatever a runner sends.
const (
	// RefusalBadRequest: the request names no work item that can exist.
	RefusalBadRequest = "bad_request"
	// RefusalOIDC: the runner's OIDC token did not verify (the HTTP layer's kind; no
	// Refusal of the service has it).
	RefusalOIDC = "oidc"
	// RefusalIdentity: the OIDC token is for another repository, event, workflow, ref
	// or run than the work item's dispatch.
	RefusalIdentity = "identity"
	// RefusalUnknownItem: the App is not installed there, or the issue has no work item.
	RefusalUnknownItem = "unknown_item"
	// RefusalAttempt: the request is for an attempt that is not the current one.
	RefusalAttempt = "attempt"
	// RefusalNonce: the nonce is wrong or was already used (a replay).
	RefusalNonce = "nonce"
	// RefusalApproval: the approval no longer holds (the issue, the plan or the base
	// moved since).
	RefusalApproval = "approval"
	// RefusalState: the work item's state allows no such request (no run may start, the
	// run is over).
	RefusalState = "state"
	// RefusalStage: the run's stage may not do this (a plan run posting evidence, say).
	RefusalStage = "stage"
	// RefusalInvalidReport: a run's report does not hold up (a malformed digest, a pull
	// request that is not the run's).
	RefusalInvalidReport = "invalid_report"
	// RefusalOther: none of the above; a refusal worded in a way refusalKinds does not
	// know (TestRefusalKinds catches the ones written as literals).
	RefusalOther = "other"
)

// refusalKinds tells a refusal's kind from its reason's words, first match wins. The
// reasons are this package's own; a test walks every refuse call and checks each
// literal has a kind, so a new refusal cannot fall into RefusalOther unnoticed.
var refusalKinds = []struct {
	kind  string
	words []string
}{
	{RefusalBadRequest, []string{"want owner/repo#issue"}},
	{RefusalNonce, []string{"nonce"}},
	{RefusalIdentity, []string{"OIDC token is for", "the run was triggered by", "the run's workflow is",
		"the run's ref is", "is not the run dispatched"}},
	{RefusalUnknownItem, []string{"is not installed on", "has no work item"}},
	{RefusalAttempt, []string{"is not the current attempt", "is not the current run"}},
	{RefusalState, []string{"run may start", "run is over", "started more than", "not reviewing",
		"state transition", "work item state", "has no pull request for a", "does not push there again",
		"which Bumper pushed and the run was dispatched for"}},
	{RefusalStage, []string{"cannot report", "cannot post a verdict", "must post its plan",
		"has no evidence to report", "reviewer is on", "reviewer is off"}},
	// After the state and stage words: a reason naming the state awaiting-approval
	// ("no implement run may start", "cannot report awaiting-approval") is not about an
	// approval.
	{RefusalApproval, []string{"approval", "approved", "plan comment", "moved from"}},
	{RefusalInvalidReport, []string{"want ", "does not exist", "is not this run's", "pull request is #",
		"already reported head", "needs the pull request number", "verdict document is", "a verdict call needs",
		"the review judged"}},
	{RefusalState, []string{"pull request #"}},
}

// Kind is the refusal's kind, one of the Refusal* constants.
func (r *Refusal) Kind() string { return RefusalKindOf(r.Reason) }

// RefusalKindOf is the kind of a refusal's reason.
func RefusalKindOf(reason string) string {
	for _, k := range refusalKinds {
		for _, w := range k.words {
			if strings.Contains(reason, w) {
				return k.kind
			}
		}
	}
	return RefusalOther
}
