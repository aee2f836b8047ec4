// Package wire holds the types the App and the runner side exchange over HTTP: the token
// exchange and the run call-backs. It imports nothing of the App so the runner can share
// it.
package wire

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Paths of the App's runner-facing endpoints.
const (
	PathTokenExchange = "/api/v1/token"
	PathProgress      = "/api/v1/run/progress"
	PathEvidence      = "/api/v1/run/evidence"
	PathVerdict       = "/api/v1/run/verdict"
	PathShouldStop    = "/api/v1/run/should-stop"
	PathTask          = "/api/v1/run/task"
	PathRefresh       = "/api/v1/run/refresh"
	PathWaiting       = "/api/v1/run/waiting"
)

// Scopes a run token may carry; each call-back endpoint needs its own. A run gets only
// those of its stage (ScopesOf).
const (
	ScopeProgress   = "progress"
	ScopeEvidence   = "evidence"
	ScopeVerdict    = "verdict"
	ScopeShouldStop = "should-stop"
	ScopeTask       = "task"
	ScopeWaiting    = "waiting"
)

// OIDCAudience is the audience a runner asks GitHub's OIDC issuer for.
const OIDCAudience = "bumper"

// ExchangeRequest is what a runner presents: its Actions OIDC token and the nonce it
// was dispatched with (the workflow input).
type ExchangeRequest struct {
	OIDCToken string `json:"oidc_token"`
	Nonce     string `json:"nonce"`
	// WorkItem is the workflow input as the runner got it, owner/repo#issue. It stays a
	// string here: the App parses it after it has verified the OIDC token, and refuses a
	// malformed one (403) as it refuses any other claim that does not match.
	WorkItem string `json:"work_item"`
	Attempt  int    `json:"attempt"`
}

// ExchangeResponse carries the run's credentials. The installation token is for the
// host-side proxy only; it never enters the VM.
type ExchangeResponse struct {
	InstallationToken string            `json:"installation_token"`
	TokenExpiresAt    time.Time         `json:"token_expires_at"`
	Permissions       map[string]string `json:"permissions"`
	Repository        string            `json:"repository"`
	RunToken          string            `json:"run_token"`
	RunTokenExpiresAt time.Time         `json:"run_token_expires_at"`
	WorkItem          WorkItem          `json:"work_item"`
	Revision          string            `json:"revision"`
	Attempt           int               `json:"attempt"`
	Stage             Stage             `json:"stage"`
	BaseCommit        string            `json:"base_commit"`
	// BaseBranch is the branch the pull request goes into.
	BaseBranch string `json:"base_branch"`
	// BotLogin is the App's own login ("slug[bot]"): the runner reuses only a pull
	// request the App opened.
	BotLogin string `json:"bot_login"`
	// Approvals are the approvals the run was dispatched under, for the evidence; a
	// plan run has none.
	Approvals []Approval `json:"approvals"`
	// Branch is the work branch the run works on: a new bumper/<issue>-<attempt> for an
	// implement run, the pull request's branch for fix and review runs. It is the only
	// branch the run may push to (fix and implement runs; a review run pushes nothing).
	Branch string `json:"branch"`
	// PullRequest and HeadCommit are, for fix and review runs, the work item's pull
	// request and the head commit the run starts from (a fix run's push must
	// fast-forward from it; a review run judges exactly it).
	PullRequest int    `json:"pull_request,omitempty"`
	HeadCommit  string `json:"head_commit,omitempty"`
	// UpdateTo is, for an update run, the base branch's head the run merges into the
	// pull request's branch (Task.UpdateTo).
	UpdateTo string `json:"update_to,omitempty"`
	// Dependencies are the other repositories of the owner the run may fetch, read-only
	// (.github/bumper.yml's dependencies.repositories at the base commit), and
	// DependencyToken an installation token of contents: read on exactly them, for the
	// host-side git gateway only, revoked when the run ends like InstallationToken.
	// Empty when none are listed, and for a plan run.
	Dependencies             []string  `json:"dependencies,omitempty"`
	DependencyToken          string    `json:"dependency_token,omitempty"`
	DependencyTokenExpiresAt time.Time `json:"dependency_token_expires_at,omitzero"`
	// BudgetMicroUSD is the model budget serve granted the run, in millionths of a
	// dollar: the least of bounds.cost_per_run_usd and what bounds.cost_per_item_usd
	// leaves after the work item's other runs. The firewall caps the run at it. 0: no
	// cap beyond the policy's own.
	BudgetMicroUSD int64 `json:"budget_micro_usd,omitempty"`
}

// Approval is one holding approval of the run's revision.
type Approval struct {
	By        string    `json:"by"`
	At        time.Time `json:"at"`
	Revision  string    `json:"revision"`
	CommentID int64     `json:"comment_id"`
}

// RunClaims are the claims of a run token.
type RunClaims struct {
	WorkItem WorkItem `json:"work_item"`
	Revision string   `json:"revision"`
	Attempt  int      `json:"attempt"`
	Stage    Stage    `json:"stage"`
	Scope    []string `json:"scope"`
	jwt.RegisteredClaims
}

// Progress reports that a run reached a step. State is one of verifying, reviewing,
// in-review (with PullRequest) or, for plan runs, awaiting-approval (with Plan).
type Progress struct {
	State       string `json:"state"`
	Message     string `json:"message,omitempty"`
	PullRequest int    `json:"pull_request,omitempty"`
	// HeadCommit is the commit the run pushed to its work branch; with PullRequest, the
	// App checks the pull request's head is exactly this commit.
	HeadCommit string `json:"head_commit,omitempty"`
	Plan       string `json:"plan,omitempty"`
}

// Waiting says a run waits for a VM slot on its runner host (Waiting true), or no longer
// does. It moves nothing: serve shows it in the status comment, with the time serve
// heard it, until the run says it no longer waits or reports its next step.
type Waiting struct {
	Waiting bool `json:"waiting"`
}

// Evidence reports the evidence bundle of an attempt.
type Evidence struct {
	Digest       string `json:"digest"`
	ImageDigest  string `json:"image_digest,omitempty"`
	CostMicroUSD int64  `json:"cost_micro_usd,omitempty"`
	AuditHead    string `json:"audit_head,omitempty"`
	PullRequest  int    `json:"pull_request,omitempty"`
	HeadCommit   string `json:"head_commit,omitempty"`
	// Outcome is how the run ended (the evidence's outcome: success, failure, stopped,
	// timed_out, over_budget, error) and Reason why, when it did not succeed: the App
	// says so when the workflow run completes.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Steers says what became of each steer the run was given (in ShouldStop or the
	// task): serve keeps the undelivered ones for the next round.
	Steers []SteerDelivery `json:"steers,omitempty"`
	// Claims are what the runner says of its run besides ImageDigest and CostMicroUSD,
	// which serve signs in the attestation as the runner's claims (docs/attestation.md).
	Claims *RunnerClaims `json:"claims,omitempty"`
}

// RunnerClaims are the parts of a run's attestation only the runner knows: serve signs
// them as the runner's, not as facts it checked.
type RunnerClaims struct {
	// EnvironmentDigest is the repository's environment's key ("" when it declares none).
	EnvironmentDigest string `json:"environment_digest,omitempty"`
	// Harness and HarnessVersion name the agent that ran ("" when no agent round ran;
	// no version for the command harness).
	Harness        string `json:"harness,omitempty"`
	HarnessVersion string `json:"harness_version,omitempty"`
	// Verification is passed, failed or not_run: the repository's verification of the
	// head the run published.
	Verification string `json:"verification"`
	// Gates are the output gates' results over what the run published; optional (none:
	// no gate ran, which is not a pass).
	Gates []GateResult `json:"gates,omitempty"`
}

// GateResult is one output gate's result: its name, pass, review, block or unavailable,
// and how many findings it had.
type GateResult struct {
	Gate     string `json:"gate"`
	Result   string `json:"result"`
	Findings int    `json:"findings"`
}

// EvidenceReceipt is serve's answer to an evidence report: the run's attestation, or
// why there is none.
type EvidenceReceipt struct {
	// Attestation is serve's signed statement of the run: one DSSE envelope as a line of
	// JSON (internal/attest), which the runner writes to evidence.intoto.jsonl.
	Attestation string `json:"attestation,omitempty"`
	// Unattested says why serve signed nothing (no head commit it knows, no key).
	Unattested string `json:"unattested,omitempty"`
}

// Run outcomes a runner reports in Evidence.Outcome.
var RunOutcomes = []string{"success", "failure", "stopped", "timed_out", "over_budget", "error"}

// MaxReason bounds Evidence.Reason, in bytes.
const MaxReason = 1000

// MaxCostMicroUSD bounds Evidence.CostMicroUSD: a million dollars, the most any cap
// (bounds.cost_per_*_usd) may be. A figure beyond it, or below 0, is refused: summed
// into the day's counters it would wrap an int64 or lower what the day spent.
const MaxCostMicroUSD = 1_000_000 * 1_000_000

// Task is what the agent is asked to do, as the App approved it: the runner writes it
// into the VM as files, and the agent reads nothing else from GitHub about the issue.
type Task struct {
	WorkItem WorkItem `json:"work_item"`
	Stage    Stage    `json:"stage"`
	// PullRequest, Branch and HeadCommit are, for fix and review runs, the work item's
	// pull request, its branch and the head the run starts from.
	PullRequest int    `json:"pull_request,omitempty"`
	Branch      string `json:"branch,omitempty"`
	HeadCommit  string `json:"head_commit,omitempty"`
	// Checks are, for a fix run, the required checks that failed on HeadCommit, with
	// their output: what the fix round is asked to make pass.
	Checks []FailedCheck `json:"checks,omitempty"`
	// Round is a revise or update run's round on the pull request, from 1.
	Round int `json:"round,omitempty"`
	// Review is, for a revise run, the writers' words the round answers (and, with
	// reviewer.revise_on_findings, the reviewer's findings); LeftOut the comments of the
	// same reviews that do not reach the agent, and why.
	Review  []ReviewComment `json:"review,omitempty"`
	LeftOut []LeftOut       `json:"left_out,omitempty"`
	// UpdateTo is, for an update run, the base branch's head to merge into the pull
	// request's branch.
	UpdateTo string `json:"update_to,omitempty"`
	// Steers are the writers' /steer words kept for this run (given while no run could
	// take them), which the agent reads with the task.
	Steers []Steer `json:"steers,omitempty"`
	// SpecRevision is the full revision of Title and Body.
	SpecRevision string `json:"spec_revision"`
	Title        string `json:"title"`
	Body         string `json:"body"`
	// Plan is the approved plan, empty when the repository does not plan first.
	Plan         string `json:"plan,omitempty"`
	PlanRevision string `json:"plan_revision,omitempty"`
	// Comments are the comments written before the approval (before the run was
	// dispatched, for a plan run) by people with write permission, not edited since.
	Comments   []TaskComment `json:"comments"`
	BaseCommit string        `json:"base_commit"`
}

// FailedCheck is a check run that failed on the pull request's head, as GitHub shows
// it. Its text comes from whatever CI produced it: the agent reads it as data.
type FailedCheck struct {
	Name       string `json:"name"`
	Conclusion string `json:"conclusion"`
	Title      string `json:"title,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Text       string `json:"text,omitempty"`
	URL        string `json:"url,omitempty"`
}

// MaxCheckText bounds each of a FailedCheck's summary and text, in bytes.
const MaxCheckText = 16 << 10

// TaskComment is one comment of the task, with who wrote it and when.
type TaskComment struct {
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Body      string    `json:"body"`
}

// Verdict reports what a review run concluded. Document is verdict.json exactly as the
// reviewer wrote it, which serve parses itself (internal/verdict) before posting it;
// Problem says why there is none the runner could send (the reviewer wrote none, the run
// failed or ran out of time). Either way serve posts the bumper/verdict check run: only a
// valid approving verdict can make it succeed.
type Verdict struct {
	Document string `json:"document,omitempty"`
	Problem  string `json:"problem,omitempty"`
	// HeadCommit is the commit the review run judged: the pull request's head when it
	// was dispatched.
	HeadCommit string `json:"head_commit"`
	// Verification is the repository's verification commands as the review run ran them
	// on HeadCommit, before the reviewer; nil when the repository lists none.
	Verification *Verification `json:"verification,omitempty"`
}

// Verification is one run of the repository's verification commands.
type Verification struct {
	Passed bool `json:"passed"`
	// Summary is one line: commands failed, tests passed and failed.
	Summary string `json:"summary"`
}

// MaxVerdictDocument bounds Verdict.Document, in bytes (internal/verdict.MaxBytes).
const MaxVerdictDocument = 256 << 10

// Refresh is a new run token for the same run, with the same claims and a new expiry:
// a run may outlive one token, never its attempt (serve refreshes only while the attempt
// is current and its work item active).
type Refresh struct {
	RunToken          string    `json:"run_token"`
	RunTokenExpiresAt time.Time `json:"run_token_expires_at"`
}

// ShouldStop answers a run asking whether to stop.
type ShouldStop struct {
	Stop   bool   `json:"stop"`
	Reason string `json:"reason,omitempty"`
	// Steers are the writers' /steer words for this run not yet reported delivered
	// (Evidence.Steers), oldest first; a run delivers each once, by its ID.
	Steers []Steer `json:"steers,omitempty"`
}

// Error is the body of every refusal.
type Error struct {
	Error string `json:"error"`
}
