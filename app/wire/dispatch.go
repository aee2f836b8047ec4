package wire

import (
	"fmt"
	"slices"
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

// RunNameTemplate is the runner workflow's run-name: GitHub shows it as the run's
// title (display_title in the REST API), so a run names its dispatch without its inputs,
// which GitHub's API does not return. A replica that died between dispatching and
// recording the dispatch is succeeded by one that finds the run by this title instead of
// dispatching the attempt again.
const RunNameTemplate = "bumper ${{ inputs.work_item }} attempt ${{ inputs.attempt }} ${{ inputs.stage }}"

// RunName is RunNameTemplate with a dispatch's inputs: the title GitHub gives its run.
func RunName(workItem string, attempt int, stage Stage) string {
	return fmt.Sprintf("bumper %s attempt %d %s", workItem, attempt, stage)
}

// Stage is what a run is dispatched to do: the `stage` input, RunClaims.Stage,
// Task.Stage, a ledger attempt's and the evidence's stage. It is the one stage type of
// the App and the runner.
type Stage string

// The stages. They are untyped constants so that a dispatch's inputs, a map of strings,
// compare with them too.
const (
	StagePlan      = "plan"
	StageImplement = "implement"
	StageFix       = "fix"
	StageReview    = "review"
	// StageRevise answers writers' words on the pull request (a review, inline comments,
	// /revise, or the reviewer's findings when the repository asks for that): a round
	// on the pull request's branch, from exactly the head that was reviewed.
	StageRevise = "revise"
	// StageUpdate keeps the pull request mergeable: the base branch's new head merged
	// into the pull request's branch (a merge commit, never a rebase), conflicts
	// resolved by the agent.
	StageUpdate = "update"
)

// Stages lists every stage, in the order a work item meets them.
func Stages() []Stage {
	return []Stage{StagePlan, StageImplement, StageFix, StageReview, StageRevise, StageUpdate}
}

// PullStage says a stage starts from the work item's open pull request, on its branch,
// at the head the App names (fix, review, revise and update runs).
func PullStage(s Stage) bool {
	return s == StageFix || s == StageReview || s == StageRevise || s == StageUpdate
}

// RoundStage says a stage's run is a round on the pull request that pushes to its
// branch (fix, revise, update): it starts from the head Bumper pushed and fast-forwards
// it, and a person's push stops it.
func RoundStage(s Stage) bool { return s == StageFix || s == StageRevise || s == StageUpdate }

// WritingStage says a stage's run changes the code, and so opens or moves the pull
// request (implement and the rounds). These are the runs /steer words reach: a plan run's
// plan is approved by a person before anything runs, and a review run judges with a
// fresh context that no one steers.
func WritingStage(s Stage) bool { return s == StageImplement || RoundStage(s) }

// stageScopes is the one table of what a run of each stage may call back for. A plan
// run posts its plan; implementation, fix, revise and update runs report progress and
// evidence; only a review run posts a verdict. Every run may say it waits for a VM slot.
var stageScopes = map[Stage][]string{
	StagePlan:      {ScopeProgress, ScopeTask, ScopeShouldStop, ScopeWaiting},
	StageImplement: {ScopeProgress, ScopeEvidence, ScopeTask, ScopeShouldStop, ScopeWaiting},
	StageFix:       {ScopeProgress, ScopeEvidence, ScopeTask, ScopeShouldStop, ScopeWaiting},
	StageRevise:    {ScopeProgress, ScopeEvidence, ScopeTask, ScopeShouldStop, ScopeWaiting},
	StageUpdate:    {ScopeProgress, ScopeEvidence, ScopeTask, ScopeShouldStop, ScopeWaiting},
	StageReview:    {ScopeVerdict, ScopeEvidence, ScopeTask, ScopeShouldStop, ScopeWaiting},
}

// ScopesOf is the run-token scope of a stage; nil for an unknown stage.
func ScopesOf(stage Stage) []string { return slices.Clone(stageScopes[stage]) }
