package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/textcut"
)

// Log keys.
const (
	logKeyPhase    = "phase"
	logKeyCount    = "count"
	logKeyWorkItem = "work_item"
	logKeyAttempt  = "attempt"
	logKeyStage    = "stage"
	logKeyOutcome  = "outcome"
	logKeyReason   = "reason"
	logKeyRound    = "round"
	logKeyPull     = "pull_request"
	logKeyDuration = "duration"
	logKeyBot      = "bot"
	logKeyPaths    = "paths"
	// A review run's verdict.
	logKeyVerdict    = "verdict"
	logKeyConfidence = "confidence"
	logKeyFindings   = "findings"
)

// Result is how the run ended. Evidence is nil only when the run could not start.
type Result struct {
	Outcome evidence.Outcome
	// Reason says why a run did not succeed.
	Reason string
	// PullRequest and PullURL name the pull request the run opened (or found).
	PullRequest int
	PullURL     string
	// Evidence is the final evidence, as written to Out; Digest its digest.
	Evidence *evidence.Evidence
	Digest   string
	// Attestation is the line naming serve's signed statement of the run, or why there
	// is none; empty when serve was not told of the evidence.
	Attestation string
	// CostMicroUSD is the firewall's metered model cost.
	CostMicroUSD int64
}

// run is what every phase after the exchange works with, fixed once the exchange is
// done: the run's configuration, what serve granted, the link to serve, and the
// evidence's recorder. What a phase makes (the session, the workspace, the booted VM,
// the verified head, the pushed head, the pull request) it returns; execute hands it on.
type run struct {
	cfg   Config
	grant *grant
	link  *link
	rec   *recorder
}

// pullStage says the run starts from the work item's pull request (fix, review, revise
// and update).
func (r *run) pullStage() bool { return wire.PullStage(r.cfg.Stage) }

// start is the commit the run's work branch starts at: a pull request run's head, else
// the approved base commit.
func (r *run) start() string {
	if r.pullStage() {
		return r.grant.HeadCommit
	}
	return r.grant.BaseCommit
}

// produced is what the phases made, as far as the run got: finish ends the run with it.
type produced struct {
	exchanged
	// session is the run's network namespace with its firewall, once opened.
	session *session
	// ws is the workspace on the host, once prepared.
	ws *workspace.Workspace
	// guest is the VM, once it booted on the workspace.
	guest *guest
	// review is what a review run's reviewer left: the verdict and the verification.
	review reviewed
	// pushed is the head the run pushed; pull the pull request it opened or updated.
	pushed string
	pull   *pullRequest
	// attestation is the evidence's line about serve's statement of the run, once
	// serve answered the evidence report (evidencemd.Attestation).
	attestation string
}

// pullNumber is the pull request the run names: the one it opened or pushed to, else
// the grant's, for the fix and review runs that start from it.
func (p *produced) pullNumber(stage wire.Stage) int {
	switch {
	case p.pull != nil:
		return p.pull.number
	case p.grant != nil && wire.PullStage(stage):
		return p.grant.PullRequest
	}
	return 0
}

// imageDigest is the image the VM boots: the environment's, once the session uses it.
func (p *produced) imageDigest(cfg Config) string {
	if p.session != nil {
		return p.session.image
	}
	return cfg.ImageDigest
}

// errStopped is the cause of a run stopped through serve.
var errStopped = errors.New("stopped")

// outcomeError carries the outcome a failure maps to.
type outcomeError struct {
	outcome evidence.Outcome
	err     error
}

func (e *outcomeError) Error() string { return e.err.Error() }
func (e *outcomeError) Unwrap() error { return e.err }

func failWith(outcome evidence.Outcome, format string, args ...any) error {
	return &outcomeError{outcome: outcome, err: fmt.Errorf(format, args...)}
}

// isTimeout says the run's wall time ran out.
func isTimeout(err error) bool {
	var oe *outcomeError
	return errors.As(err, &oe) && oe.outcome == evidence.OutcomeTimedOut
}

// Run performs one dispatched run. The error says why the run failed (its Result, when
// not nil, holds the evidence written anyway); nil means the pull request is open (or,
// for a plan run, the plan is posted).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("failed to start the run: %w", err)
	}
	if err := os.MkdirAll(cfg.Out, 0o750); err != nil {
		return nil, fmt.Errorf("failed to create the output directory: %w", err)
	}
	rec := newRecorder(cfg)
	log := zerolog.Ctx(ctx).With().Str(logKeyWorkItem, cfg.WorkItem.String()).Int(logKeyAttempt, cfg.Attempt).Str(logKeyStage, string(cfg.Stage)).Logger()
	ctx, cancel := context.WithCancelCause(log.WithContext(ctx))
	defer cancel(nil)
	got, err := execute(ctx, cfg, rec, cancel)
	if err != nil && context.Cause(ctx) != nil && !errors.Is(err, context.Cause(ctx)) {
		err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
	}
	// The stop poller ends: the run ends as it is, whatever serve says from now on.
	cancel(nil)
	return finish(ctx, cfg, rec, &got, err)
}

// execute runs the phases in order; the first failure ends the run. It returns what they
// made as far as they got.
func execute(ctx context.Context, cfg Config, rec *recorder, cancel context.CancelCauseFunc) (p produced, err error) {
	if p.exchanged, err = step(ctx, rec, evidence.PhaseExchange, func(ctx context.Context) (exchanged, string, error) {
		return exchange(ctx, cfg, rec.ev)
	}); err != nil {
		return p, err
	}
	r := &run{cfg: cfg, grant: p.grant, link: p.link, rec: rec}
	go r.link.pollStop(ctx, cfg.StopPoll, cancel)
	if p.session, err = step(ctx, rec, evidence.PhaseFirewall, r.openSession); err != nil {
		return p, err
	}
	if p.ws, err = step(ctx, rec, evidence.PhaseWorkspace, func(ctx context.Context) (*workspace.Workspace, string, error) {
		return r.prepareWorkspace(ctx, p.session)
	}); err != nil {
		return p, err
	}
	// The VM's own limit counts from its start; this one counts from now, so the fetch
	// and a first snapshot cannot eat the margin the push and the pull request need.
	vmCtx, cancelVM := context.WithDeadline(ctx, vmDeadline(r.grant.TokenExpiresAt, cfg.Now()))
	defer cancelVM()
	// The host's VM slot, before the first VM (the environment's setup or the run's):
	// the session gives it back once its VMs are down.
	if p.session.slot, err = r.waitForSlot(vmCtx); err != nil {
		return p, err
	}
	if r.needsImage() {
		if err := rec.phase(vmCtx, evidence.PhaseEnvironment, 0, func(ctx context.Context) (string, error) {
			return r.buildEnvironment(ctx, p.session, p.ws)
		}); err != nil {
			return p, err
		}
	}
	if p.guest, err = step(vmCtx, rec, evidence.PhaseBoot, func(ctx context.Context) (*guest, string, error) {
		return r.boot(ctx, p.session, p.ws)
	}); err != nil {
		return p, err
	}
	if cfg.Stage == wire.StageReview {
		// A review run pushes and publishes nothing: its verdict goes to serve, which
		// posts the review and the bumper/verdict check run itself.
		p.review, err = r.review(vmCtx, p.guest)
		return p, err
	}
	var mg merged
	if cfg.Stage == wire.StageUpdate {
		if mg, err = step(vmCtx, rec, evidence.PhaseMerge, func(ctx context.Context) (merged, string, error) {
			return r.merge(ctx, p.guest)
		}); err != nil {
			return p, err
		}
	}
	head, err := r.rounds(vmCtx, p.guest)
	if err != nil {
		return p, err
	}
	if cfg.Stage == wire.StagePlan {
		return p, rec.phase(ctx, evidence.PhaseReport, 0, func(ctx context.Context) (string, error) {
			return r.reportPlan(ctx, p.guest)
		})
	}
	if p.pushed, err = step(ctx, rec, evidence.PhasePush, func(ctx context.Context) (string, string, error) {
		return r.push(ctx, p.guest, head, mg)
	}); err != nil {
		return p, err
	}
	// The VM and the firewall go down: the audit log is final, and the evidence the pull
	// request shows has the firewall's account of the run (cost, egress, audit head).
	p.session.shutDown(ctx)
	p.session.settle(ctx, rec.ev, rec.out)
	p.pull, err = step(ctx, rec, evidence.PhasePullRequest, func(ctx context.Context) (*pullRequest, string, error) {
		if r.pullStage() {
			return r.updatePull(ctx, p.pushed, p.ws)
		}
		return r.openPull(ctx, p.pushed)
	})
	return p, err
}

// vmDeadline is when the VM's work must end: TokenMargin before the installation token
// expires (far away when its expiry is unknown).
func vmDeadline(tokenExpires, now time.Time) time.Time {
	if tokenExpires.IsZero() {
		return now.Add(24 * time.Hour)
	}
	return tokenExpires.Add(-TokenMargin)
}

// maxLine is the evidence schema's bound on a line (a phase's detail, the outcome's
// reason).
const maxLine = 1000

// ellipsis ends a string cut short.
const ellipsis = textcut.Ellipsis

// cut shortens s to at most n bytes, ellipsis included, on a character boundary:
// within the evidence schema's limits, which count characters (never more than bytes).
func cut(s string, n int) string { return textcut.Fit(s, n, ellipsis) }
