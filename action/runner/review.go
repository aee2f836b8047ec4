package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/verify"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/bumperdev/bumper/internal/verdict"
)

// A review run's inputs beside TASK.md, and the variables its reviewer gets.
const (
	// ReviewDiffFile is the pull request's diff (base...head), computed on the host.
	ReviewDiffFile = "pr.diff"
	// ReviewEvidenceFile is the pull request's body as GitHub holds it: the
	// implementing run's evidence.
	ReviewEvidenceFile = "evidence.md"
	// VerdictFile is what the reviewer writes in /out, and the artifact keeps.
	VerdictFile = verdict.File
	// MaxReviewDiff bounds pr.diff; MaxReviewEvidence the pull request's body read.
	MaxReviewDiff     = 16 << 20
	MaxReviewEvidence = 256 << 10
	// MaxVerificationEnv bounds the verification report a reviewer gets in its
	// environment (one environment string may be at most 128 KiB on Linux).
	MaxVerificationEnv = 32 << 10

	envReviewHead         = "BUMPER_REVIEW_HEAD"
	envReviewBase         = "BUMPER_REVIEW_BASE"
	envReviewRepo         = "BUMPER_REVIEW_REPO"
	envReviewDiff         = "BUMPER_REVIEW_DIFF"
	envReviewEvidence     = "BUMPER_REVIEW_EVIDENCE"
	envReviewVerification = "BUMPER_VERIFICATION"
	envVerdict            = "BUMPER_VERDICT"
)

// guestVerdict is where the reviewer writes its verdict in the VM.
const guestVerdict = workspace.GuestOut + "/" + VerdictFile

// reviewConventions end a review run's TASK.md: what the reviewer reads, that it
// changes nothing, and how it writes its verdict.
func reviewConventions() string {
	var b strings.Builder
	b.WriteString("\n---\n\n## How this review run works\n\n")
	b.WriteString("- This is a review run: judge the pull request above against the task. Change nothing: nothing you change is kept, and every push is refused.\n")
	b.WriteString("- Read the pull request's diff (base...head) in `" + workspace.GuestTask + "/" + ReviewDiffFile + "`, the implementing run's evidence (the pull request's body, with its decision ledger: the judgment calls it made) in `" + workspace.GuestTask + "/" + ReviewEvidenceFile + "`, and the head's files in `" + workspace.GuestHead + "`. You run in `" + workspace.GuestBase + "`, the approved base's files. Those three directories are read-only.\n")
	b.WriteString("- The repository's verification commands ran on the head before you started; their report is in the environment variable `" + envReviewVerification + "`. You may run the tests again in `" + workspace.GuestRepo + "`, the head's checkout.\n")
	b.WriteString("- Write your verdict to `" + guestVerdict + "` as JSON matching the schema verdict-v1 (`internal/verdict/schema/verdict-v1.json` in Bumper's repository): `schema_version` 1, `verdict` one of `approve`, `request_changes`, `comment`, `confidence` from 0 to 1, a `summary` in Markdown, and `findings` (each with `severity` blocker, major, minor or nit, a `message`, and optionally the `file` and `line` it is about, with `side` RIGHT for the head's line or LEFT for a removed one). No verdict, or one that does not match, fails the review. A verdict is never an approval: humans merge. For example:\n\n")
	b.WriteString("```json\n" + `{"schema_version": 1, "verdict": "request_changes", "confidence": 0.7,
 "summary": "The change works, but the new flag is not documented.",
 "findings": [{"file": "cli.go", "line": 42, "side": "RIGHT", "severity": "minor", "message": "Document --frob in the usage text."}]}` + "\n```\n")
	return b.String()
}

// reviewed is what a review run's reviewer left: the verdict document as it wrote it
// (nil: none) and the verification the run ran first (nil: none).
type reviewed struct {
	doc          []byte
	verification *wire.Verification
}

// reviewInputs writes a review run's inputs beside TASK.md before the VM boots: the pull
// request's diff, computed on the host from the fetched commits, and its body (the
// implementing run's evidence), read with the run's read-only token.
func (r *run) reviewInputs(ctx context.Context, ws *workspace.Workspace) error {
	g, repo := r.grant, r.cfg.WorkItem.Repository
	diff, err := ws.Git(ctx, nil, MaxReviewDiff, "diff", "--no-ext-diff", "--no-textconv", "--binary", g.BaseCommit+"..."+g.HeadCommit, "--")
	if err != nil {
		return fmt.Errorf("failed to compute the pull request's diff (at most %d bytes): %w", MaxReviewDiff, err)
	}
	if err := ws.AddTaskFile(ReviewDiffFile, diff); err != nil {
		return err
	}
	r.rec.keep(DiffFile, diff)
	owner, name, _ := strings.Cut(repo, "/")
	pr, _, err := g.gh.PullRequests.Get(ctx, owner, name, g.PullRequest)
	if err != nil {
		return fmt.Errorf("failed to read pull request #%d: %w", g.PullRequest, err)
	}
	if pr.GetHead().GetRef() != g.branch || !strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), repo) {
		return fmt.Errorf("pull request #%d is from %s:%s, not the run's %s", g.PullRequest, pr.GetHead().GetRepo().GetFullName(), pr.GetHead().GetRef(), g.branch)
	}
	body := textcut.Bytes(strings.ToValidUTF8(pr.GetBody(), "\uFFFD"), MaxReviewEvidence)
	return ws.AddTaskFile(ReviewEvidenceFile, []byte(body))
}

// review is a review run's work in the VM: the repository's verification commands once
// on the head, then the reviewer once, from the base commit's read-only tree; then its
// verdict read back. What the reviewer left goes to serve when the run reports
// (finish), whatever happened here, so it is returned with any error.
func (r *run) review(ctx context.Context, vm *guest) (reviewed, error) {
	var out reviewed
	h, err := harness.New(r.harnessPolicy())
	if err != nil {
		return out, failWith(evidence.OutcomeError, "failed to set up the reviewer's harness: %w", err)
	}
	report := "The repository lists no verification commands."
	if cmds := r.grant.policy.Verification; len(cmds) > 0 && r.grant.policy.Bounds.VerificationRounds != 0 {
		var vr *verify.Round
		if err := r.rec.phase(ctx, evidence.PhaseVerification, 1, func(ctx context.Context) (string, error) {
			var err error
			if vr, err = r.verifyRound(ctx, vm, 1, cmds); err != nil {
				return "", err
			}
			return summarizeRound(vr), nil
		}); err != nil {
			return out, err
		}
		out.verification = &wire.Verification{Passed: vr.Passed, Summary: summarizeRound(vr)}
		report = "Verification passed: " + summarizeRound(vr) + "."
		if !vr.Passed {
			report = "Verification failed: " + summarizeRound(vr) + ".\n\n" + vr.Feedback
		}
	}
	err = r.rec.phase(ctx, evidence.PhaseAgent, 1, func(ctx context.Context) (detail string, err error) {
		out.doc, detail, err = r.reviewerRound(ctx, vm, h, textcut.Bytes(report, MaxVerificationEnv))
		return detail, err
	})
	return out, err
}

// reviewerScript prepares the reviewer's command, run as a command of its own after
// verification, when the guest has killed every process the tests left: it empties /out
// (a verdict.json the tests planted is not the reviewer's) and makes a fresh home and
// temporary directory under names the tests could not know (mkdir fails on anything
// already there).
const reviewerScript = `set -e
find "$BUMPER_OUT_DIR" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
mkdir -m 700 -- "$BUMPER_FRESH_HOME" "$BUMPER_FRESH_TMP"`

// reviewerRound runs the reviewer once and reads its verdict (readVerdict).
func (r *run) reviewerRound(ctx context.Context, vm *guest, h harness.Harness, report string) ([]byte, string, error) {
	logf, err := r.rec.outFile(fmt.Sprintf(TranscriptPattern, 1))
	if err != nil {
		return nil, "", err
	}
	defer logf.Close()
	w := r.rec.logTo(logf, fmt.Sprintf(TranscriptPattern, 1))
	defer w.Close()
	nonce := make([]byte, 12)
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("failed to name the reviewer's directories: %w", err)
	}
	home := "/tmp/bumper-reviewer-" + hex.EncodeToString(nonce)
	st, err := vm.exec(ctx, []string{"sh", "-c", reviewerScript},
		[]string{"BUMPER_OUT_DIR=" + workspace.GuestOut, "BUMPER_FRESH_HOME=" + home, "BUMPER_FRESH_TMP=" + home + "-tmp"}, w, w)
	if err != nil {
		return nil, "", err
	}
	if st.Code != 0 {
		return nil, "", failWith(evidence.OutcomeError, "failed to prepare the reviewer's directories (exit %d): something already holds them", st.Code)
	}
	ev := r.rec.ev
	ev.Harness = &evidence.Harness{Name: h.Name(), ToolCalls: map[string]int{}}
	if hp := r.harnessPolicy(); hp.Name != repoconfig.HarnessCommand {
		ev.Harness.Version = hp.Version
	}
	counter := &toolCounter{h: ev.Harness}
	env := append(r.agentEnv(),
		"HOME="+home, "TMPDIR="+home+"-tmp", "XDG_CONFIG_HOME="+home+"/.config", "XDG_CACHE_HOME="+home+"/.cache",
		envReviewHead+"="+workspace.GuestHead, envReviewBase+"="+workspace.GuestBase, envReviewRepo+"="+workspace.GuestRepo,
		envReviewDiff+"="+workspace.GuestTask+"/"+ReviewDiffFile, envReviewEvidence+"="+workspace.GuestTask+"/"+ReviewEvidenceFile,
		envReviewVerification+"="+report, envVerdict+"="+guestVerdict)
	// The reviewer's program runs from the base commit's tree, read-only in the VM: the
	// pull request's agent wrote the head, and a reviewer taken from it would be
	// whatever that agent wanted.
	res, err := h.Run(ctx, vm.execIn(workspace.GuestBase), harness.Request{Round: 1, Env: env, Stdout: w, Stderr: w, OnEvent: counter.event})
	if err != nil {
		return nil, "", fmt.Errorf("failed to run the %s reviewer: %w", h.Name(), err)
	}
	counter.settle(res.Counts)
	ev.Commands = append(ev.Commands, evidence.Command{Phase: evidence.PhaseAgent, Command: h.Name() + " reviewer", ExitCode: res.Exit.Code})
	if err := vm.s.overBudget(); err != nil {
		return nil, "", err
	}
	if !res.OK {
		return nil, "", failWith(evidence.OutcomeFailure, "the reviewer failed: %s", res.Reason)
	}
	if err := vm.collectOut(ctx, r.rec); err != nil {
		return nil, "", err
	}
	return r.readVerdict(ctx, vm.ws.OutDir)
}
