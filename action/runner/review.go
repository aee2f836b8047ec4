package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

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

// reviewInputs writes a review run's inputs beside TASK.md before the VM boots: the pull
// request's diff, computed on the host from the fetched commits, and its body (the
// implementing run's evidence), read with the run's read-only token.
func (r *run) reviewInputs(ctx context.Context) error {
	diff, err := r.ws.Git(ctx, nil, MaxReviewDiff, "diff", "--no-ext-diff", "--no-textconv", "--binary", r.grant.BaseCommit+"..."+r.grant.HeadCommit, "--")
	if err != nil {
		return fmt.Errorf("failed to compute the pull request's diff (at most %d bytes): %w", MaxReviewDiff, err)
	}
	if err := r.ws.AddTaskFile(ReviewDiffFile, diff); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(r.cfg.Out, DiffFile), diff, 0o640)
	owner, name, _ := strings.Cut(r.repo, "/")
	pr, _, err := r.gh.PullRequests.Get(ctx, owner, name, r.grant.PullRequest)
	if err != nil {
		return fmt.Errorf("failed to read pull request #%d: %w", r.grant.PullRequest, err)
	}
	if pr.GetHead().GetRef() != r.branch || !strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), r.repo) {
		return fmt.Errorf("pull request #%d is from %s:%s, not the run's %s", r.grant.PullRequest, pr.GetHead().GetRepo().GetFullName(), pr.GetHead().GetRef(), r.branch)
	}
	body := textcut.Bytes(strings.ToValidUTF8(pr.GetBody(), "\uFFFD"), MaxReviewEvidence)
	return r.ws.AddTaskFile(ReviewEvidenceFile, []byte(body))
}

// review is a review run's work in the VM: the repository's verification commands once
// on the head, then the reviewer once, from the base commit's read-only tree; then its
// verdict read back. The verdict goes to serve when the run reports (finish), whatever
// happened here.
func (r *run) review(ctx context.Context) error {
	h, err := harness.New(r.harnessPolicy())
	if err != nil {
		return failWith(evidence.OutcomeError, "failed to set up the reviewer's harness: %w", err)
	}
	report := "The repository lists no verification commands."
	if cmds := r.policy.Verification; len(cmds) > 0 && r.policy.Bounds.VerificationRounds != 0 {
		var vr *verify.Round
		if err := r.phase(ctx, evidence.PhaseVerification, 1, func(ctx context.Context) (string, error) {
			var err error
			if vr, err = r.verifyRound(ctx, 1, cmds); err != nil {
				return "", err
			}
			return summarizeRound(vr), nil
		}); err != nil {
			return err
		}
		r.verification = &wire.Verification{Passed: vr.Passed, Summary: summarizeRound(vr)}
		report = "Verification passed: " + summarizeRound(vr) + "."
		if !vr.Passed {
			report = "Verification failed: " + summarizeRound(vr) + ".\n\n" + vr.Feedback
		}
	}
	return r.phase(ctx, evidence.PhaseAgent, 1, func(ctx context.Context) (string, error) {
		return r.reviewerRound(ctx, h, textcut.Bytes(report, MaxVerificationEnv))
	})
}

// reviewerScript prepares the reviewer's command, run as a command of its own after
// verification, when the guest has killed every process the tests left: it empties /out
// (a verdict.json the tests planted is not the reviewer's) and makes a fresh home and
// temporary directory under names the tests could not know (mkdir fails on anything
// already there).
const reviewerScript = `set -e
find "$BUMPER_OUT_DIR" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
mkdir -m 700 -- "$BUMPER_FRESH_HOME" "$BUMPER_FRESH_TMP"`

// reviewerRound runs the reviewer once and reads its verdict.
func (r *run) reviewerRound(ctx context.Context, h harness.Harness, report string) (string, error) {
	logf, err := r.outFile(fmt.Sprintf(TranscriptPattern, 1))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	w := r.logTo(logf, fmt.Sprintf(TranscriptPattern, 1))
	defer w.Close()
	nonce := make([]byte, 12)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("failed to name the reviewer's directories: %w", err)
	}
	home := "/tmp/bumper-reviewer-" + hex.EncodeToString(nonce)
	st, err := r.exec(ctx, []string{"sh", "-c", reviewerScript},
		[]string{"BUMPER_OUT_DIR=" + workspace.GuestOut, "BUMPER_FRESH_HOME=" + home, "BUMPER_FRESH_TMP=" + home + "-tmp"}, w, w)
	if err != nil {
		return "", err
	}
	if st.Code != 0 {
		return "", failWith(evidence.OutcomeError, "failed to prepare the reviewer's directories (exit %d): something already holds them", st.Code)
	}
	r.ev.Harness = &evidence.Harness{Name: h.Name(), ToolCalls: map[string]int{}}
	if hp := r.harnessPolicy(); hp.Name != repoconfig.HarnessCommand {
		r.ev.Harness.Version = hp.Version
	}
	counter := &toolCounter{h: r.ev.Harness}
	env := append(r.agentEnv(),
		"HOME="+home, "TMPDIR="+home+"-tmp", "XDG_CONFIG_HOME="+home+"/.config", "XDG_CACHE_HOME="+home+"/.cache",
		envReviewHead+"="+workspace.GuestHead, envReviewBase+"="+workspace.GuestBase, envReviewRepo+"="+workspace.GuestRepo,
		envReviewDiff+"="+workspace.GuestTask+"/"+ReviewDiffFile, envReviewEvidence+"="+workspace.GuestTask+"/"+ReviewEvidenceFile,
		envReviewVerification+"="+report, envVerdict+"="+guestVerdict)
	// The reviewer's program runs from the base commit's tree, read-only in the VM: the
	// pull request's agent wrote the head, and a reviewer taken from it would be
	// whatever that agent wanted.
	res, err := h.Run(ctx, r.execIn(workspace.GuestBase), harness.Request{Round: 1, Env: env, Stdout: w, Stderr: w, OnEvent: counter.event})
	if err != nil {
		return "", fmt.Errorf("failed to run the %s reviewer: %w", h.Name(), err)
	}
	counter.settle(res.Counts)
	r.ev.Commands = append(r.ev.Commands, evidence.Command{Phase: evidence.PhaseAgent, Command: h.Name() + " reviewer", ExitCode: res.Exit.Code})
	if err := r.overBudget(); err != nil {
		return "", err
	}
	if !res.OK {
		return "", failWith(evidence.OutcomeFailure, "the reviewer failed: %s", res.Reason)
	}
	if err := r.collectOut(ctx); err != nil {
		return "", err
	}
	return r.readVerdict(ctx)
}

// readVerdict reads the reviewer's verdict.json from what the guest left in /out: a
// regular file, never through a link, within verdict.MaxBytes. It is kept as written
// (serve parses it itself and decides); the runner parses it too, for the job log and
// the evidence. One that does not parse still goes to serve, and fails the run.
func (r *run) readVerdict(ctx context.Context) (string, error) {
	data, err := readSmall(filepath.Join(r.ws.OutDir, VerdictFile), verdict.MaxBytes)
	if errors.Is(err, os.ErrNotExist) {
		return "", failWith(evidence.OutcomeFailure, "the reviewer wrote no %s", guestVerdict)
	}
	if err != nil {
		return "", failWith(evidence.OutcomeFailure, "the reviewer's %s is refused: %w", guestVerdict, err)
	}
	r.verdictDoc = data
	_ = os.WriteFile(filepath.Join(r.cfg.Out, VerdictFile), data, 0o640)
	rv := r.reviewEvidence()
	rv.VerdictDigest = verdict.Digest(data)
	v, err := verdict.Parse(data)
	if err != nil {
		rv.Problem = cut(err.Error(), maxLine)
		return "", failWith(evidence.OutcomeFailure, "the reviewer's verdict does not parse (serve is sent it as written, and fails the check saying why): %w", err)
	}
	conf := v.Confidence
	rv.Verdict, rv.Confidence, rv.Findings = v.Verdict, &conf, len(v.Findings)
	zerolog.Ctx(ctx).Info().Str(logKeyVerdict, v.Verdict).Float64(logKeyConfidence, v.Confidence).Int(logKeyFindings, len(v.Findings)).Msg("the reviewer's verdict")
	return fmt.Sprintf("verdict %s (confidence %.2f), %d finding(s); %s", v.Verdict, v.Confidence, len(v.Findings), rv.VerdictDigest), nil
}

// reviewEvidence is the evidence's review section, made on first use.
func (r *run) reviewEvidence() *evidence.Review {
	if r.ev.Review == nil {
		r.ev.Review = &evidence.Review{HeadCommit: r.grant.HeadCommit}
	}
	return r.ev.Review
}

// sendVerdict gives serve the review run's verdict: the document as the reviewer wrote
// it, or the problem (the run's reason) when there is none. Every review run that got
// its credentials sends one, so that serve's bumper/verdict check says why it failed.
func (r *run) sendVerdict(ctx context.Context, reason string) error {
	v := wire.Verdict{HeadCommit: r.grant.HeadCommit, Verification: r.verification}
	if r.verdictDoc != nil {
		v.Document = string(r.verdictDoc)
	} else {
		v.Problem = wireReason(orDefault(reason, "the reviewer wrote no "+guestVerdict))
	}
	if err := r.client().Verdict(ctx, v); err != nil {
		return fmt.Errorf("failed to send the verdict: %w", err)
	}
	r.verdictSent = true
	return nil
}

// noteReviewProblem records in the evidence why a review run has no valid verdict,
// once the run is over.
func (r *run) noteReviewProblem(reason string) {
	if r.cfg.Stage != wire.StageReview || !r.exchanged {
		return
	}
	rv := r.reviewEvidence()
	if r.verdictDoc == nil && rv.Problem == "" {
		rv.Problem = cut(orDefault(reason, "the reviewer wrote no "+guestVerdict), maxLine)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
