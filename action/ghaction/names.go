// Package ghaction is `bumper run`'s side of GitHub Actions, through go-githubactions:
// the action's input and output names (here and nowhere else), its inputs read and
// checked with their defaults (ReadInputs), the run's context (ReadContext), and thin
// helpers for log groups, annotations, masks, outputs and the job summary (Env).
//
// The helpers also work outside Actions, so that `bumper run` can be run by hand: without
// GITHUB_ACTIONS=true nothing is masked (printing a secret to mask it would show it) and
// groups and annotations are plain lines; without GITHUB_OUTPUT outputs are printed as
// name=value lines; without GITHUB_STEP_SUMMARY the summary is skipped.
package ghaction

import (
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
)

// The inputs of action.yml. GitHub gives input NAME to an action as INPUT_<NAME>,
// upper-cased, hyphens kept; action.yml passes each to `bumper run` so, explicitly,
// because a composite action's steps get no INPUT_* of their own. The four dispatch
// inputs have the names the App dispatches them under: the workflow passes them through,
// and the emulator's runner hands them to `bumper run` directly.
const (
	InputURL               = "url"
	InputWorkItem          = wire.DispatchInputWorkItem
	InputAttempt           = wire.DispatchInputAttempt
	InputNonce             = wire.DispatchInputNonce
	InputStage             = wire.DispatchInputStage
	InputImage             = "image"
	InputCache             = "cache"
	InputAccel             = "accel"
	InputAllowTCG          = "allow-tcg"
	InputCPUs              = "cpus"
	InputMemory            = "memory"
	InputOut               = "out"
	InputQEMUUser          = "qemu-user"
	InputAllowInsecureHTTP = "allow-insecure-http"
	// InputVersion is read by action.yml's first step, which fetches or builds the bumper
	// binary; `bumper run` does not read it.
	InputVersion = "version"
)

// The outputs of action.yml, which it takes from `bumper run`'s step.
const (
	OutputPullRequest    = "pull_request"
	OutputEvidenceDigest = "evidence_digest"
	OutputCostUSD        = "cost_usd"
	OutputOutcome        = "outcome"
)

// OutputNames lists the outputs in action.yml's order.
func OutputNames() []string {
	return []string{OutputPullRequest, OutputEvidenceDigest, OutputCostUSD, OutputOutcome}
}

// Defaults that are not plain words. RunnerTempExpr is how action.yml writes
// $RUNNER_TEMP in a default; VersionDefault makes `version` the action's own ref.
const (
	RunnerTempExpr = "${{ runner.temp }}"
	VersionDefault = "${{ github.action_ref }}"
	// OutDirName is the run's output directory under RUNNER_TEMP by default.
	OutDirName = "bumper-run"
)

// InputSpec is one input of action.yml as `bumper run` reads it.
type InputSpec struct {
	Name     string
	Required bool
	// Default is what an empty input means, written as action.yml writes it (an input's
	// default there must be the same).
	Default string
}

// InputSpecs lists the inputs `bumper run` reads, in action.yml's order, with their
// defaults: the one table ReadInputs applies and action.yml's test holds action.yml to.
func InputSpecs() []InputSpec {
	return []InputSpec{
		{Name: InputURL, Required: true},
		{Name: InputWorkItem, Required: true},
		{Name: InputAttempt, Required: true},
		{Name: InputNonce, Required: true},
		{Name: InputStage, Required: true},
		{Name: InputImage},
		{Name: InputCache, Default: image.DefaultCacheDir},
		{Name: InputAccel, Default: sandbox.AccelAuto},
		{Name: InputAllowTCG, Default: "false"},
		{Name: InputCPUs, Default: "2"},
		{Name: InputMemory, Default: "2G"},
		{Name: InputOut, Default: RunnerTempExpr + "/" + OutDirName},
		{Name: InputQEMUUser, Default: "nobody"},
		{Name: InputAllowInsecureHTTP, Default: "false"},
	}
}

// ActionInputNames lists every input of action.yml in its order: InputSpecs, then
// InputVersion.
func ActionInputNames() []string {
	var out []string
	for _, s := range InputSpecs() {
		out = append(out, s.Name)
	}
	return append(out, InputVersion)
}

// EnvName is the variable that carries input name: INPUT_ and the name upper-cased with
// spaces turned into underscores, as GitHub's runner and go-githubactions spell it.
func EnvName(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case c == ' ':
			b[i] = '_'
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return "INPUT_" + string(b)
}
