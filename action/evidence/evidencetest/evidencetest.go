// Package evidencetest holds the evidence bundles the tests of action/evidence and
// its renderings share: a realistic run and a failed one, with every optional field
// set between them, and their golden files (action/evidence/testdata).
package evidencetest

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/app/wire"
)

// Golden compares got with the golden file at path (action/evidence/testdata/…, from
// the test's package), or rewrites it when update is set (the test's -update flag).
func Golden(t *testing.T, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", path, got)
	}
}

// Hash is 64 hex digits that c picks.
func Hash(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = "0123456789abcdef"[(int(c)+i*7)%16]
	}
	return string(b)
}

// SHA is Hash(c) as a revision ("sha256:…").
func SHA(c byte) string { return "sha256:" + Hash(c) }

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

func int64p(n int64) *int64 { return &n }

// Realistic is a full bundle of a successful implement run that needed two
// verification rounds, with every optional field set: testdata/realistic.json.
func Realistic() *evidence.Evidence {
	files := []evidence.FileStat{
		{Path: "internal/webhook/client.go", Insertions: 84, Deletions: 12},
		{Path: "internal/webhook/client_test.go", Insertions: 121, Deletions: 3},
		{Path: "internal/webhook/testdata/retry.golden", Insertions: 9},
		{Path: "docs/webhooks.md", Insertions: 14, Deletions: 2},
		{Path: ".github/workflows/ci.yml", Insertions: 2, Deletions: 1},
		{Path: "assets/diagram.png", Binary: true},
	}
	diff := evidence.NewDiffStat(files)
	ledger := evidence.NewLedger([]byte(`{"schema_version": 1, "decisions": [
	  {"question": "Which errors should be retried?", "choice": "Network errors and 5xx responses; never 4xx",
	   "rationale": "A 4xx means the request is wrong and retrying it cannot help.", "confidence": 0.85},
	  {"question": "How many retries, and how long between them?", "choice": "Five attempts, exponential backoff from 200ms with full jitter, capped at 10s",
	   "rationale": "The issue asks for backoff but names no numbers; these follow the AWS architecture blog's advice.",
	   "confidence": 0.4, "alternatives": ["Three attempts with fixed 1s delays", "Make the numbers configurable"]},
	  {"question": "Should the CI workflow run the new tests with -race?", "choice": "Yes: added -race to the test step",
	   "rationale": "The retry loop starts goroutines; the race detector is the only check that sees misuse.", "confidence": 0.55}
	]}`), true)
	if ledger.Status != evidence.LedgerOK {
		panic(ledger.Error)
	}
	phases := []evidence.Phase{
		evidence.NewPhase(evidence.PhaseExchange, at(0), at(0.412), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhaseFirewall, at(0.412), at(0.530), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhaseWorkspace, at(0.530), at(2.104), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhaseEnvironment, at(2.104), at(2.350), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhaseBoot, at(2.350), at(2.891), evidence.PhaseOK),
		inRound(evidence.NewPhase(evidence.PhaseAgent, at(2.891), at(401.2), evidence.PhaseOK), 1),
		evidence.NewPhase(evidence.PhaseVerification, at(401.2), at(455.75), evidence.PhaseFailed),
		inRound(evidence.NewPhase(evidence.PhaseAgent, at(455.75), at(590.3), evidence.PhaseOK), 2),
		evidence.NewPhase(evidence.PhaseVerification, at(590.3), at(642.9), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhasePush, at(642.9), at(644.1), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhasePullRequest, at(644.1), at(645.0), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhaseReport, at(645.0), at(645.6), evidence.PhaseOK),
		evidence.NewPhase(evidence.PhaseRevoke, at(645.6), at(645.8), evidence.PhaseOK),
	}
	phases[6].Round, phases[6].Detail = 1, "1 test failed"
	phases[8].Round = 2
	phases[4].Detail = "warm start from snapshot 4f2a"

	e := &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion,
		WorkItem:      evidence.WorkItem{Repository: "acme/widgets", Issue: 42, Title: "Retry webhook deliveries with backoff"},
		Trigger: evidence.Trigger{Event: "workflow_dispatch", WorkflowRef: "acme/widgets/.github/workflows/bumper-run.yml@refs/heads/main",
			RunID: 9876543210, RunAttempt: 1, Actor: "bumper-app[bot]", Runner: "bumper-runner-03"},
		Revision:   SHA(1),
		Approvals:  []wire.Approval{{By: "maintainer-jo", At: at(-600), Revision: SHA(1), CommentID: 2468013579}},
		Stage:      wire.StageImplement,
		Attempt:    2,
		Outcome:    evidence.OutcomeSuccess,
		BaseCommit: "9fceb02d0ae598e95dc970b74767f19372d61af8",
		HeadCommit: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
		// The agent's head, which the run pushed rewritten as the App's.
		VerifiedCommit: "3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
		// Too large for GitHub's API: pushed with git, unsigned.
		PublishedVia:  "git-push",
		PublishedNote: "the change is too large to publish through GitHub's Git Data API: more than 300 file changes",
		Branch:        "bumper/42-2",
		PullRequest:   57,
		StartedAt:     at(0),
		Harness: &evidence.Harness{Name: "claude-code", Version: "2.1.328", Turns: 14,
			ToolCalls: map[string]int{"Bash": 9, "Read": 7, "Edit": 4, "Grep": 2}},
		Environment: &evidence.Environment{ID: SHA(5), BaseImageDigest: SHA(6), ImageDigest: SHA(2),
			Packages: []string{"golang-go", "ca-certificates"}, Setup: "scripts/env-setup.sh", DurationMS: 246},
		Sandbox: &evidence.Sandbox{VMM: "qemu-microvm 9.2.0", Accel: "tcg",
			AccelReason: "KVM canary did not finish booting within 5s (nested KVM hangs)", ImageDigest: SHA(2),
			VCPUs: 2, MemoryMB: 2048, Boot: "warm", BootReason: "restoring snapshot 4f2a"},
		Phases: phases,
		Commands: []evidence.Command{
			{Phase: evidence.PhaseAgent, Command: "claude -p @TASK.md --output-format stream-json --max-turns 60", ExitCode: 0, DurationMS: 398309},
			{Phase: evidence.PhaseVerification, Command: "go test -json ./...", ExitCode: 1, DurationMS: 54550},
			{Phase: evidence.PhaseAgent, Command: "claude -p @FIX.md --output-format stream-json --max-turns 20", ExitCode: 0, DurationMS: 134550},
			{Phase: evidence.PhaseVerification, Command: "go test -json ./...", ExitCode: 0, DurationMS: 52600},
			{Phase: evidence.PhasePush, Command: "git push origin HEAD:refs/heads/bumper/42-2", ExitCode: 0, DurationMS: 1200},
		},
		Tests: []evidence.TestRun{
			{Round: 1, Command: "go test -json ./...", ExitCode: 1, Format: "go-test-json", Passed: 311, Failed: 1, Skipped: 4, DurationMS: 54550,
				Failures: []evidence.Failure{{Name: "TestRetryBackoff/gives_up_after_five_attempts",
					Excerpt: evidence.Excerpt("=== RUN   TestRetryBackoff/gives_up_after_five_attempts\n" +
						"    client_test.go:88: attempts = 6, want 5\n" +
						"--- FAIL: TestRetryBackoff/gives_up_after_five_attempts (0.01s)\n")}}},
			{Round: 2, Command: "go test -json ./...", ExitCode: 0, Format: "go-test-json", Passed: 312, Skipped: 4, DurationMS: 52600},
		},
		Diff: diff,
		Egress: evidence.SummarizeEgress([]evidence.AuditEntry{
			{Kind: "connect", Target: "proxy.golang.org:443", Allowed: true, Reason: "allowlist proxy.golang.org", BytesUp: 8_200, BytesDown: 3_400_000},
			{Kind: "connect", Target: "proxy.golang.org:443", Allowed: true, Reason: "allowlist proxy.golang.org", BytesUp: 7_900, BytesDown: 1_100_000},
			{Kind: "connect", Target: "sum.golang.org:443", Allowed: true, Reason: "allowlist sum.golang.org", BytesUp: 2_100, BytesDown: 45_000},
			{Kind: "anthropic", Target: "/anthropic/v1/messages", Allowed: true, Reason: "model call", BytesUp: 310_000, BytesDown: 82_000},
			{Kind: "anthropic", Target: "/anthropic/v1/messages", Allowed: true, Reason: "model call", BytesUp: 290_000, BytesDown: 61_000},
			{Kind: "git", Target: "/git/acme/widgets.git/git-receive-pack", Allowed: true, Reason: "push to refs/heads/bumper/42-2", BytesUp: 24_000, BytesDown: 900},
			{Kind: "connect", Target: "pastebin.com:443", Allowed: false, Reason: "not in the allowlist"},
			{Kind: "http", Target: "169.254.169.254", Allowed: false, Reason: "not in the allowlist"},
			{Kind: "http", Target: "169.254.169.254", Allowed: false, Reason: "not in the allowlist"},
		}),
		Cost: evidence.Cost{MeteredMicroUSD: 1_842_310, MeteredCalls: 37, Estimated: true, EstimatedCalls: 1,
			SelfReportedMicroUSD: int64p(1_790_000), BudgetMicroUSD: 5_000_000},
		Ledger:      ledger,
		Risk:        risk.Note(diff.Paths()),
		Audit:       &evidence.Audit{Head: SHA(3), Entries: 214},
		Revocation:  evidence.Revocation{Revoked: true, At: at(645.8)},
		Credentials: []evidence.CredentialGrant{{Name: "npm-acme", Hosts: []string{"npm.acme.example", "artifacts.acme.example/npm"}}},
		// Two private Go modules of the same organisation (issue #26).
		Dependencies: []string{"acme/widgets-lib", "acme/.github"},
		Artifact:     &evidence.Artifact{Name: "bumper-evidence-42-2", URL: "https://github.com/acme/widgets/actions/runs/9876543210/artifacts/1234567"},
	}
	// The output gates found one link for a person to look at; the dependency the
	// run added has no advisory.
	e.Gates = &gates.Result{
		Findings: []gates.Finding{{Gate: gates.GateLinks, File: "docs/retries.md", Line: 12, Action: gates.ActionReview,
			Message: "adds an image to backoff-diagrams.example, a host not on the allowlist"}},
		Dependencies: []gates.Dependency{{Ecosystem: "Go", Name: "github.com/cenkalti/backoff/v4", Version: "v4.3.0", File: "go.mod", Line: 7}},
		OSV:          &gates.OSV{URL: gates.DefaultOSVURL, Checked: true},
	}
	e.Finish(at(645.8))
	// The agent tried a registry the policy does not list, twice, and a name that
	// resolves to the metadata address.
	e.Egress.Denials = evidence.SummarizeDenials([]evidence.AuditEntry{
		{Kind: "connect", Target: "pkgs.example.test:443", Denied: "host", Time: at(120.5)},
		{Kind: "connect", Target: "pkgs.example.test:443", Denied: "host", Time: at(121)},
		{Kind: "http", Target: "meta.example.test", Denied: "private-address", Time: at(130)},
	}, nil, evidence.PolicyKeyAllowlist, []byte("version: 1\nallowlist:\n  - proxy.golang.org\n  - sum.golang.org\n"))
	// Its environment's setup was refused the Go module mirror.
	e.Environment.Denials = evidence.SummarizeDenials([]evidence.AuditEntry{
		{Kind: "connect", Target: "goproxy.example.test:443", Denied: "host", Time: at(2.2)},
	}, nil, evidence.PolicyKeyEnvironmentAllow, []byte("version: 1\nenvironment:\n  packages: [golang-go, ca-certificates]\n  setup: scripts/env-setup.sh\n"))
	return e
}

// Failed is a run that ran out of verification rounds: the optional fields of a
// failure are set (outcome reason, an invalid decision ledger, a token not revoked).
func Failed() *evidence.Evidence {
	e := Realistic()
	e.Outcome = evidence.OutcomeFailure
	e.OutcomeReason = "verification failed in every round (2 of 2)"
	e.HeadCommit, e.VerifiedCommit, e.Branch, e.PullRequest = "", "", "", 0
	e.Tests[1].ExitCode, e.Tests[1].Passed, e.Tests[1].Failed = 1, 311, 1
	e.Tests[1].Failures = e.Tests[0].Failures
	e.Phases[8].Outcome = evidence.PhaseFailed
	e.Phases = append(e.Phases[:9], e.Phases[11:]...) // no push, no pull request
	e.Commands = e.Commands[:4]
	e.Ledger = evidence.NewLedger([]byte(`{"schema_version": 1, "decisions": [{"question": "?", "choice": "x", "confidence": "high"}]}`), true)
	e.Revocation = evidence.Revocation{Reason: "DELETE /installation/token answered 502"}
	e.Audit = nil
	e.Artifact = nil
	// The harness's own account is far from what the firewall metered.
	e.Cost.SelfReportedDisagrees = true
	e.Harness.UnknownEvents = 3
	// This run built its environment first (its first phase took the setup's time).
	e.Environment.Built, e.Environment.SetupMS = true, 198
	e.Environment.Log, e.Environment.AuditLog = "environment.log", "environment-audit.jsonl"
	// The setup was refused a mirror, and the file's environment is one the patch
	// cannot extend.
	e.Environment.Denials = evidence.SummarizeDenials([]evidence.AuditEntry{
		{Kind: "connect", Target: "mirror.example.test:443", Denied: "host", Time: at(1.5)},
	}, nil, evidence.PolicyKeyEnvironmentAllow, []byte("version: 1\nenvironment: {setup: scripts/env-setup.sh}\n"))
	// And its allowlist is an anchor the suggestion cannot extend.
	e.Egress.Denials = evidence.SummarizeDenials([]evidence.AuditEntry{
		{Kind: "connect", Target: "pkgs.example.test:443", Denied: "host", Time: at(120.5)},
	}, nil, evidence.PolicyKeyAllowlist, []byte("version: 1\nallowlist: &hosts\n  - proxy.golang.org\n"))
	// A review section with every field: a verdict that parsed, and a problem besides.
	conf := 0.4
	e.Review = &evidence.Review{HeadCommit: e.BaseCommit, Verdict: "request_changes", Confidence: &conf, Findings: 2,
		VerdictDigest: "sha256:" + strings.Repeat("ab", 32), Problem: "the reviewer wrote a second verdict.json after the first was read"}
	// The gates blocked a token (masked), and OSV could not be reached.
	e.Gates = &gates.Result{
		Findings: []gates.Finding{
			{Gate: gates.GateSecrets, File: "internal/retry/client.go", Line: 31, Action: gates.ActionBlock, Message: "GitHub personal access token ghp_******** (40 characters)"},
			{Gate: gates.GateProtectedPaths, File: ".claude/settings.json", Action: gates.ActionReview, Message: "adds .claude/settings.json, which **/.claude/** protects"},
			{Gate: gates.GateDependencies, File: "go.mod", Action: gates.ActionReview, Message: "1 dependencies were not checked for advisories: OSV at https://api.osv.dev could not be reached: connection refused"},
		},
		Dependencies:        []gates.Dependency{{Ecosystem: "npm", Name: "left-pad", Version: "1.3.0", File: "web/package.json", Line: 9, Advisories: []string{"GHSA-xxxx-yyyy-zzzz"}}},
		OSV:                 &gates.OSV{URL: gates.DefaultOSVURL, Error: "OSV at https://api.osv.dev could not be reached: connection refused"},
		OmittedFindings:     2,
		OmittedDependencies: 1,
	}
	// Two writers' steers: one the agent got while it worked, one that came too late.
	e.Steers = []evidence.Steer{
		{ID: 9001, Author: "maintainer", CreatedAt: at(40), ArrivedAt: at(42), Via: evidence.SteerViaMessage, DeliveredAt: at(43),
			Text: "Use the existing helper in util.go instead of a new one."},
		{ID: 9002, Author: "octo-cat", CreatedAt: at(90), ArrivedAt: at(91), Note: "the agent had finished its work in the round when it came",
			Text: "Also keep the old flag working."},
	}
	return e
}

// inRound sets a phase's round (agent and verification phases carry one).
func inRound(p evidence.Phase, round int) evidence.Phase {
	p.Round = round
	return p
}

// Revise is a successful review round (stage revise, round 2) on Realistic's pull
// request: two writers' comments answered, three left out (one past what the record
// lists), the agent's replies posted but one, which GitHub refused.
func Revise() *evidence.Evidence {
	e := Realistic()
	e.Stage, e.Attempt = wire.StageRevise, 3
	e.Branch = "bumper/42-2"
	e.Round = &evidence.Round{Number: 2,
		Answered: []evidence.Answered{
			{ID: 880101, Kind: wire.ReviewKindInline, Author: "maintainer-jo", ThreadID: 880101},
			{ID: 770202, Kind: wire.ReviewKindReview, Author: "maintainer-jo"},
		},
		LeftOut: []wire.LeftOut{
			{ID: 880103, Author: "drive-by", Association: "NONE", Reason: wire.LeftOutNotWriter},
			{ID: 880104, Author: "ci-helper[bot]", Association: "NONE", Reason: wire.LeftOutBot},
		},
		LeftOutOmitted: 1,
		Replies: &evidence.Replies{Status: evidence.RepliesOK, Posted: []evidence.PostedReply{
			{ThreadID: 880101, Changed: true, CommentID: 880105},
			{ThreadID: 880106, Changed: false, Error: "POST …/pulls/57/comments/880106/replies answered 422"},
		}},
	}
	return e
}

// Update is an update round (stage update, round 1) whose merge of the base branch's
// new head conflicted in two files the agent resolved.
func Update() *evidence.Evidence {
	e := Realistic()
	e.Stage, e.Attempt = wire.StageUpdate, 3
	e.Round = &evidence.Round{Number: 1, Answered: []evidence.Answered{}, LeftOut: []wire.LeftOut{},
		Merge: &evidence.Merge{From: e.HeadCommit, To: "5d41402abc4b2a76b9719d911017c592ae1ee9b0", Conflicted: true,
			Files: []string{"internal/webhook/client.go", "docs/webhooks.md"}, FilesOmitted: 1}}
	return e
}

// InvalidReplies is Revise where the agent's replies.json was refused: nothing posted.
func InvalidReplies() *evidence.Evidence {
	e := Revise()
	e.Round.Replies = &evidence.Replies{Status: evidence.RepliesInvalid,
		Error: "replies.json: /replies/1 answers thread 12, which is not one of the task's review threads [880101]"}
	return e
}
