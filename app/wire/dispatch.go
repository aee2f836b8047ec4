package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// The runner workflow's workflow_dispatch inputs: the App sends exactly these, the
// workflow template declares exactly these and passes them to the action under the same
// names. GitHub's runner (and the emulator's) gives them to `bumper run` as INPUT_<NAME>.
const (
	DispatchInputWorkItem = "work_item" // owner/repo#issue
	DispatchInputAttempt  = "attempt"   // the attempt number, from 1
	DispatchInputNonce    = "nonce"     // single-use, for the token exchange
	DispatchInputStage    = "stage"     // one of Stages()
)

// DispatchInputs lists the dispatch inputs in the order the workflow declares them.
func DispatchInputs() []string {
	return []string{DispatchInputWorkItem, DispatchInputAttempt, DispatchInputNonce, DispatchInputStage}
}

// The stages a run is dispatched for (the `stage` input, ExchangeResponse.Stage,
// RunClaims.Stage).
const (
	StagePlan      = "plan"
	StageImplement = "implement"
	StageFix       = "fix"
	StageReview    = "review"
)

// Stages lists every stage.
func Stages() []string { return []string{StagePlan, StageImplement, StageFix, StageReview} }

// ParseWorkItem splits a work item's name, "owner/repo#issue", into the repository
// ("owner/repo") and the issue number (1 or more).
func ParseWorkItem(s string) (repo string, issue int, err error) {
	repo, num, ok := strings.Cut(s, "#")
	n, convErr := strconv.Atoi(num)
	owner, name, slash := strings.Cut(repo, "/")
	if !ok || convErr != nil || n < 1 || !slash || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", 0, fmt.Errorf("work item %q: want owner/repo#issue", s)
	}
	return repo, n, nil
}
