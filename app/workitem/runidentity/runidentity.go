// Package runidentity checks that the run presenting a token exchange is the one Bumper
// dispatched for a work item's current attempt: what the run's verified Actions OIDC
// token says (Identity) against the dispatch, and the attempt's single-use nonce, which
// the record keeps only hashed. Every refusal is a *runnerrefusal.Refusal.
package runidentity

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/runnerrefusal"
)

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

// HashNonce is a nonce as the record keeps it: a record anyone can read must not hand
// out the nonce itself.
func HashNonce(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DispatchedBy checks what the OIDC token says before the work item is looked at: the
// token is for the work item's repository, and for a run of a workflow_dispatch.
func DispatchedBy(id Identity, w wire.WorkItem) error {
	if !strings.EqualFold(id.Repository, w.Repository) {
		return runnerrefusal.New(runnerrefusal.Identity, "the OIDC token is for repository %s, not %s", id.Repository, w.Repository)
	}
	// Fail closed: GitHub always names the triggering event, so a token without one is
	// not an Actions run Bumper dispatched.
	if id.EventName != "workflow_dispatch" {
		return runnerrefusal.New(runnerrefusal.Identity, "the run was triggered by %q, not by Bumper's workflow_dispatch", id.EventName)
	}
	return nil
}

// DispatchedRun checks that the run presenting the token is the one the work item's
// current attempt was dispatched as: Bumper's runner workflow (workflow, its file name)
// on the base branch, the attempt's unused nonce, the attempt's workflow run. It
// returns the attempt.
func DispatchedRun(id Identity, rec *ledger.Record, req wire.ExchangeRequest, workflow string) (*ledger.Attempt, error) {
	wantWF := fmt.Sprintf("%s/.github/workflows/%s@refs/heads/%s", rec.Repository, workflow, rec.BaseBranch)
	if !strings.EqualFold(id.WorkflowRef, wantWF) {
		return nil, runnerrefusal.New(runnerrefusal.Identity, "the run's workflow is %s, not Bumper's runner workflow %s", id.WorkflowRef, wantWF)
	}
	if id.Ref != "refs/heads/"+rec.BaseBranch {
		return nil, runnerrefusal.New(runnerrefusal.Identity, "the run's ref is %s, not refs/heads/%s", id.Ref, rec.BaseBranch)
	}
	att := rec.CurrentAttempt()
	if att == nil || att.Number != req.Attempt {
		return nil, runnerrefusal.New(runnerrefusal.Attempt, "attempt %d is not the current attempt of %s", req.Attempt, rec.ID())
	}
	if subtle.ConstantTimeCompare([]byte(HashNonce(req.Nonce)), []byte(att.NonceHash)) != 1 {
		return nil, runnerrefusal.New(runnerrefusal.Nonce, "the nonce does not match attempt %d's", att.Number)
	}
	if att.NonceUsed {
		return nil, runnerrefusal.New(runnerrefusal.Nonce, "the nonce of attempt %d was already used", att.Number)
	}
	if strconv.FormatInt(att.RunID, 10) != id.RunID {
		return nil, runnerrefusal.New(runnerrefusal.Identity, "run %s is not the run dispatched for attempt %d", id.RunID, att.Number)
	}
	return att, nil
}
