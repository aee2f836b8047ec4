package evidence

import (
	"time"

	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/textcut"
)

// SchemaVersion is the version of evidence.json this package writes and reads
// (schema/evidence-v1.json).
const SchemaVersion = 1

// File names of the bundle.
const (
	// FileName is the bundle as uploaded in the run's artifact.
	FileName = "evidence.json"
	// DecisionsFile is where the agent writes its decision ledger inside the VM.
	DecisionsFile = "/out/decisions.json"
)

// Bounds of what a bundle holds (the schema says the same).
const (
	// MaxExcerptBytes bounds one failure's output excerpt; see Excerpt.
	MaxExcerptBytes = 8192
	// MaxFailures bounds the failures kept per test run.
	MaxFailures = 1000
)

// Evidence is the bundle of one run (evidence.json). Slices may be nil; Marshal writes
// them as empty lists. Times may be in any zone; Marshal writes them in UTC.
type Evidence struct {
	SchemaVersion int      `json:"schema_version"`
	WorkItem      WorkItem `json:"work_item"`
	Trigger       Trigger  `json:"trigger"`
	// Revision is the approval revision the run was dispatched for ("sha256:…").
	Revision string `json:"revision"`
	// Approvals authorized the run (the App's, whose JSON is what the schema's
	// approval says); empty only for a plan run.
	Approvals []wire.Approval `json:"approvals"`
	// Stage is what the run was dispatched to do.
	Stage   wire.Stage `json:"stage"`
	Attempt int        `json:"attempt"`
	Outcome Outcome    `json:"outcome"`
	// OutcomeReason says why, in a line, when the outcome is not success.
	OutcomeReason string `json:"outcome_reason,omitempty"`
	// BaseCommit and HeadCommit are full git object ids; HeadCommit is what the run
	// pushed to Branch, empty when it pushed nothing.
	BaseCommit string `json:"base_commit"`
	HeadCommit string `json:"head_commit,omitempty"`
	// VerifiedCommit is the head as the agent made it and verification judged it, when
	// the run pushed its rewrite as the App's (HeadCommit, the same tree): the commit the
	// agent's transcripts and logs name.
	VerifiedCommit string `json:"verified_commit,omitempty"`
	// PublishedVia is how the run published Branch: "api" (GitHub's Git Data API, the
	// commits GitHub's and signed: Verified) or "git-push" (unsigned, through the git
	// gateway, when the change is too large for the API); PublishedNote says why a
	// push was used. Empty when nothing was published.
	PublishedVia  string    `json:"published_via,omitempty"`
	PublishedNote string    `json:"published_note,omitempty"`
	Branch        string    `json:"branch,omitempty"`
	PullRequest   int       `json:"pull_request,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	EndedAt       time.Time `json:"ended_at"`
	// WallTimeMS is EndedAt − StartedAt in milliseconds (see Finish).
	WallTimeMS int64 `json:"wall_time_ms"`
	// Environment is nil when the repository declares none (or the run ended before
	// its policy was read).
	Environment *Environment `json:"environment,omitempty"`
	// Sandbox is nil when the run ended before a VM booted.
	Sandbox  *Sandbox  `json:"sandbox,omitempty"`
	Phases   []Phase   `json:"phases"`
	Commands []Command `json:"commands"`
	Tests    []TestRun `json:"tests"`
	// Harness is nil when no agent round ran.
	Harness *Harness `json:"harness,omitempty"`
	Diff    DiffStat `json:"diff"`
	Egress  Egress   `json:"egress"`
	Cost    Cost     `json:"cost"`
	Ledger  Ledger   `json:"decision_ledger"`
	// Risk flags the changed files that govern the checks (risk.Note).
	Risk []risk.Flag `json:"risk_flags"`
	// Audit is nil when the firewall never started.
	Audit      *Audit     `json:"audit,omitempty"`
	Revocation Revocation `json:"token_revocation"`
	// Credentials are the runner host's credentials the run was granted, by name and
	// host (docs/credentials.md); never a value.
	Credentials []CredentialGrant `json:"credentials,omitempty"`
	// Dependencies are the other repositories of the owner the run was granted to
	// fetch, read-only, with a token of their own (.github/bumper.yml's
	// dependencies.repositories); empty when none were.
	Dependencies []string `json:"dependencies,omitempty"`
	// Artifact names where evidence.json was uploaded; the Markdown (evidencemd)
	// points at it when it cuts something.
	Artifact *Artifact `json:"artifact,omitempty"`
	// Review is a review run's judgement of the pull request; nil for other stages.
	Review *Review `json:"review,omitempty"`
	// Round is a revise or update run's round on the pull request (NewRound); nil for
	// other stages.
	Round *Round `json:"round,omitempty"`
	// Steers are the writers' /steer words the run was given, in the order it had
	// them, and what became of each.
	Steers []Steer `json:"steers,omitempty"`
	// Gates are the output gates' results over what the run would publish (the diff,
	// the commit messages, the texts posted for the agent); nil when they did not run.
	Gates *gates.Result `json:"gates,omitempty"`
}

// Review is what a review run concluded about the pull request's head: the verdict the
// reviewer wrote (verdict.json, which the App reads itself), or why there is none.
type Review struct {
	// HeadCommit is the commit reviewed: the pull request's head at dispatch.
	HeadCommit string `json:"head_commit"`
	// Verdict, Confidence and Findings are verdict.json's, when it parsed.
	Verdict    string   `json:"verdict,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	Findings   int      `json:"findings"`
	// VerdictDigest is the SHA-256 of verdict.json as written (verdict.Digest), when
	// the reviewer wrote one, valid or not.
	VerdictDigest string `json:"verdict_digest,omitempty"`
	// Problem says why there is no valid verdict: none written, one that does not
	// parse (the parser's error), or the run failed before the reviewer finished.
	Problem string `json:"problem,omitempty"`
}

// Finish sets EndedAt and WallTimeMS.
func (e *Evidence) Finish(end time.Time) {
	e.EndedAt = end
	e.WallTimeMS = end.Sub(e.StartedAt).Milliseconds()
}

// WorkItem is the issue the run works on.
type WorkItem struct {
	Repository string `json:"repository"` // owner/name
	Issue      int    `json:"issue"`
	Title      string `json:"title"`
}

// Trigger is the Actions run that executed the attempt (GITHUB_EVENT_NAME,
// GITHUB_WORKFLOW_REF, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT, GITHUB_ACTOR, RUNNER_NAME).
type Trigger struct {
	Event       string `json:"event"`
	WorkflowRef string `json:"workflow_ref"`
	RunID       int64  `json:"run_id"`
	RunAttempt  int    `json:"run_attempt"`
	Actor       string `json:"actor"`
	Runner      string `json:"runner,omitempty"`
}

// Outcome is how the run ended.
type Outcome string

// The outcomes.
const (
	OutcomeSuccess    Outcome = "success"
	OutcomeFailure    Outcome = "failure"
	OutcomeStopped    Outcome = "stopped"
	OutcomeTimedOut   Outcome = "timed_out"
	OutcomeOverBudget Outcome = "over_budget"
	OutcomeError      Outcome = "error"
)

// Sandbox describes the microVM.
type Sandbox struct {
	VMM         string `json:"vmm"`   // e.g. "qemu-microvm 9.2.0"
	Accel       string `json:"accel"` // kvm or tcg
	AccelReason string `json:"accel_reason"`
	ImageDigest string `json:"image_digest"`
	VCPUs       int    `json:"vcpus"`
	MemoryMB    int    `json:"memory_mb"`
	Boot        string `json:"boot,omitempty"` // cold or warm
	BootReason  string `json:"boot_reason,omitempty"`
}

// Environment is the repository's environment the VM booted: the image built from
// .github/bumper.yml's environment: section at the base commit, found in the runner's
// cache or built by this run (its setup's output and firewall audit log are then in
// the artifact).
type Environment struct {
	// ID is the environment's key: the digest of everything its image is made from.
	ID string `json:"id"`
	// BaseImageDigest is the base image with the environment's packages; ImageDigest
	// the image the VM booted (derived from it when there is a setup), absent when the
	// setup failed.
	BaseImageDigest string   `json:"base_image_digest"`
	ImageDigest     string   `json:"image_digest,omitempty"`
	Packages        []string `json:"packages"`
	Setup           string   `json:"setup,omitempty"`
	// Built says this run ran the setup; false when the image was found.
	Built bool `json:"built"`
	// DurationMS is the environment phase (finding or building); SetupMS the setup's
	// VM session when it ran.
	DurationMS int64 `json:"duration_ms"`
	SetupMS    int64 `json:"setup_ms,omitempty"`
	// Log and AuditLog name the setup's output and its firewall's audit log in the
	// artifact, when the setup ran.
	Log      string `json:"log,omitempty"`
	AuditLog string `json:"audit_log,omitempty"`
	// Denials are the destinations the setup was refused, with the suggested change to
	// environment.allow; nil when there were none.
	Denials *Denials `json:"denials,omitempty"`
}

// PhaseName names a step of the run.
type PhaseName string

// The phases, in the order a run goes through them.
const (
	PhaseExchange     PhaseName = "exchange"
	PhaseFirewall     PhaseName = "firewall"
	PhaseWorkspace    PhaseName = "workspace"
	PhaseEnvironment  PhaseName = "environment"
	PhaseBoot         PhaseName = "boot"
	PhaseMerge        PhaseName = "merge" // an update run's merge of the base branch's head
	PhaseAgent        PhaseName = "agent"
	PhaseVerification PhaseName = "verification"
	PhaseGates        PhaseName = "gates" // the output gates, on the host, before the push
	PhasePush         PhaseName = "push"
	PhasePullRequest  PhaseName = "pull_request"
	PhaseReport       PhaseName = "report"
	PhaseRevoke       PhaseName = "revoke"
)

// PhaseOutcome is how a phase ended.
type PhaseOutcome string

// The phase outcomes.
const (
	PhaseOK        PhaseOutcome = "ok"
	PhaseFailed    PhaseOutcome = "failed"
	PhaseSkipped   PhaseOutcome = "skipped"
	PhaseTimedOut  PhaseOutcome = "timed_out"
	PhaseCancelled PhaseOutcome = "cancelled"
)

// Phase is one step of the run. Round is set for verification phases (required) and
// agent phases (the agent's turns between verifications), and for no other.
type Phase struct {
	Name       PhaseName    `json:"name"`
	Round      int          `json:"round,omitempty"`
	StartedAt  time.Time    `json:"started_at"`
	EndedAt    time.Time    `json:"ended_at"`
	DurationMS int64        `json:"duration_ms"`
	Outcome    PhaseOutcome `json:"outcome"`
	Detail     string       `json:"detail,omitempty"`
}

// NewPhase is a phase that ran from start to end, with its duration.
func NewPhase(name PhaseName, start, end time.Time, outcome PhaseOutcome) Phase {
	return Phase{Name: name, StartedAt: start, EndedAt: end, DurationMS: end.Sub(start).Milliseconds(), Outcome: outcome}
}

// Command is one command the run executed.
type Command struct {
	Phase      PhaseName `json:"phase"`
	Command    string    `json:"command"`
	ExitCode   int       `json:"exit_code"`
	DurationMS int64     `json:"duration_ms"`
}

// TestRun is one test command of a verification round.
type TestRun struct {
	Round    int    `json:"round"`
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	// Format says where the counts come from: a report the runner parsed
	// ("go-test-json", "junit", "tap"), or "exit-code" when only the exit code is known.
	Format     string    `json:"format"`
	Passed     int       `json:"passed"`
	Failed     int       `json:"failed"`
	Skipped    int       `json:"skipped"`
	DurationMS int64     `json:"duration_ms"`
	Failures   []Failure `json:"failures"`
}

// Failure is one failed test with an excerpt of its output (see Excerpt).
type Failure struct {
	Name    string `json:"name"`
	Excerpt string `json:"excerpt"`
}

// DiffStat is the change from base to head.
type DiffStat struct {
	Files        []FileStat `json:"files"`
	FilesChanged int        `json:"files_changed"`
	Insertions   int        `json:"insertions"`
	Deletions    int        `json:"deletions"`
}

// FileStat is one changed file; a binary file counts no lines.
type FileStat struct {
	Path       string `json:"path"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
}

// NewDiffStat totals files.
func NewDiffStat(files []FileStat) DiffStat {
	d := DiffStat{Files: files, FilesChanged: len(files)}
	for _, f := range files {
		d.Insertions += f.Insertions
		d.Deletions += f.Deletions
	}
	return d
}

// Paths are the changed files' paths, for risk.Note.
func (d DiffStat) Paths() []string {
	out := make([]string, len(d.Files))
	for i, f := range d.Files {
		out[i] = f.Path
	}
	return out
}

// Cost is what the run spent on model calls, in micro-USD.
type Cost struct {
	// MeteredMicroUSD is the firewall's figure, which is authoritative.
	MeteredMicroUSD int64 `json:"metered_micro_usd"`
	MeteredCalls    int64 `json:"metered_calls"`
	// Estimated says some calls reported no usage and were charged their worst case.
	Estimated      bool  `json:"estimated"`
	EstimatedCalls int64 `json:"estimated_calls"`
	// SelfReportedMicroUSD is what the harness said it spent; nil when it said nothing.
	SelfReportedMicroUSD *int64 `json:"self_reported_micro_usd,omitempty"`
	// SelfReportedDisagrees says the harness's figure and the metered one differ by
	// more than 20 % of the metered one (Disagree) (or the harness reported spend where
	// nothing was metered): the metered figure stands, a reviewer should know.
	SelfReportedDisagrees bool  `json:"self_reported_disagrees,omitempty"`
	BudgetMicroUSD        int64 `json:"budget_micro_usd,omitempty"`
}

// disagreeRatio is how far a harness's own cost may be from the metered cost before
// the evidence flags it.
const disagreeRatio = 0.20

// Disagree says whether a self-reported cost is more than 20 % of the metered one away
// from it.
func Disagree(selfReported, metered int64) bool {
	diff := selfReported - metered
	if diff < 0 {
		diff = -diff
	}
	return float64(diff) > disagreeRatio*float64(metered)
}

// Harness is the agent that ran: which CLI at which release, and what its event
// stream reported over all rounds (counts for display; nothing else trusts them).
type Harness struct {
	Name string `json:"name"`
	// Version is the pinned release of a CLI harness; absent for the command harness.
	Version string `json:"version,omitempty"`
	Turns   int    `json:"turns"`
	// ToolCalls counts the agent's tool calls by tool name.
	ToolCalls     map[string]int `json:"tool_calls"`
	UnknownEvents int            `json:"unknown_events"`
}

// LedgerStatus says whether the agent's decision ledger was there and valid.
type LedgerStatus string

// The ledger statuses.
const (
	LedgerOK      LedgerStatus = "ok"
	LedgerAbsent  LedgerStatus = "absent"
	LedgerInvalid LedgerStatus = "invalid"
)

// Ledger is the agent's decision ledger, least confident first.
type Ledger struct {
	Status LedgerStatus `json:"status"`
	// Error says what was wrong with an invalid ledger.
	Error     string     `json:"error,omitempty"`
	Decisions []Decision `json:"decisions"`
}

// NewLedger is the ledger read from the agent's file (decisions.json), which is
// untrusted: present says whether the file was there. The file must be at most 256 KiB
// of valid UTF-8 holding one JSON object with no duplicate keys, valid against
// schema/decisions-v1.json (version 1, no unknown fields, at most 100 decisions,
// bounded strings, confidence a number from 0 to 1); an invalid file gives an invalid
// ledger whose Error says what was wrong and where (a JSON pointer). The decisions come
// least confident first; equal confidences keep the file's order.
func NewLedger(data []byte, present bool) Ledger {
	if !present {
		return Ledger{Status: LedgerAbsent}
	}
	ds, err := parseDecisions(data)
	if err != nil {
		kept, _ := textcut.Runes(err.Error(), 1000)
		return Ledger{Status: LedgerInvalid, Error: kept}
	}
	return Ledger{Status: LedgerOK, Decisions: ds}
}

// Audit is the head of the firewall's hash-chained audit log.
type Audit struct {
	Head    string `json:"head"` // "sha256:…" of the last line
	Entries int64  `json:"entries"`
}

// Revocation says whether the run's installation token was revoked when it ended,
// when, or why not.
type Revocation struct {
	Revoked bool      `json:"revoked"`
	At      time.Time `json:"at,omitzero"`
	Reason  string    `json:"reason,omitempty"`
}

// Artifact is the run's artifact holding evidence.json.
type Artifact struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// CredentialGrant is one credential a run was granted: its name on the runner host and
// the hosts (name[:port][/prefix]) the firewall added it toward.
type CredentialGrant struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
}
