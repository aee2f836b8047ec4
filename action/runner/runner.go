package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/bumperdev/bumper/sandbox"
)

// Log keys.
const (
	logKeyPhase    = "phase"
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
	// CostMicroUSD is the firewall's metered model cost.
	CostMicroUSD int64
}

// run is one run's state as it goes.
type run struct {
	cfg   Config
	repo  string
	issue int
	ev    *evidence.Evidence

	// serve is serve's client with the run token, once exchanged; the stop poller
	// replaces it when it refreshes the token (tokenMu; read it with client()).
	serve                     *appclient.Client
	tokenMu                   sync.Mutex
	tokenIssued, tokenExpires time.Time
	grant                     wire.ExchangeResponse
	task                      wire.Task
	policy                    repoconfig.Config
	gh                        *github.Client

	fw *firewall.Firewall
	vm *sandbox.Session // guarded by stopMu once the poller runs
	ws *workspace.Workspace

	// stopMu guards stopReason (set when serve said stop) and vm, which the stop
	// poller reads.
	stopMu     sync.Mutex
	stopReason string
	cancel     context.CancelCauseFunc
	// branch is the run's work branch as checkGrant let it through: the only branch it
	// may push (fix and implement runs).
	branch string
	// tokens exchanged: the installation token must be revoked at the end.
	exchanged bool
	// A review run's results: the verdict document as the reviewer wrote it (nil:
	// none), the verification it ran first, and whether serve has the verdict.
	verdictDoc   []byte
	verification *wire.Verification
	verdictSent  bool
	pull         pullInfo
	// head is the work branch's commit as the last agent round left it: what
	// verification judged, and the only commit the run may push.
	head string
	// jobLog is the run's share of the job log for what runs in the VM (logTo).
	jobLog *jobLog
	// last is what the VM said of the last command beyond its exit status: why /out
	// could not come back, what processes the command left.
	last sandbox.Result
	// imageDigest is the image the VM boots: the runner's, or the environment's.
	imageDigest string
	// wallTime is the VM session's limit: bounds.wall_time, within the token's life.
	wallTime  time.Duration
	closeOnce sync.Once
	// vmStarted says the VM booted; collected that /out was read back from it;
	// vmClosed that the VM and its firewall are down (the audit log is final); filled that
	// the evidence was filled from them after that.
	vmStarted, collected, vmClosed, filled bool
}

type pullInfo struct {
	number int
	url    string
	head   string
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
	item, _ := wire.ParseWorkItem(cfg.WorkItem)
	repo, issue := item.Repository, item.Issue
	now := cfg.Now().UTC()
	r := &run{cfg: cfg, repo: repo, issue: issue, imageDigest: cfg.ImageDigest, ev: &evidence.Evidence{
		SchemaVersion: evidence.SchemaVersion, WorkItem: evidence.WorkItem{Repository: repo, Issue: issue},
		Trigger: cfg.Trigger, Stage: wire.Stage(cfg.Stage), Attempt: cfg.Attempt, StartedAt: now,
		Approvals: []wire.Approval{}, Ledger: evidence.Ledger{Status: evidence.LedgerAbsent},
	}}
	log := zerolog.Ctx(ctx).With().Str(logKeyWorkItem, cfg.WorkItem).Int(logKeyAttempt, cfg.Attempt).Str(logKeyStage, cfg.Stage).Logger()
	ctx = log.WithContext(ctx)
	ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	err := r.execute(ctx)
	return r.finish(ctx, err)
}

// execute runs the phases in order; the first failure ends the run.
func (r *run) execute(ctx context.Context) error {
	if err := r.phase(ctx, evidence.PhaseExchange, 0, r.exchange); err != nil {
		return err
	}
	go r.pollStop(ctx)
	if err := r.phase(ctx, evidence.PhaseFirewall, 0, r.startFirewall); err != nil {
		return err
	}
	if err := r.phase(ctx, evidence.PhaseWorkspace, 0, r.prepareWorkspace); err != nil {
		return err
	}
	// The VM's own limit counts from its start; this one counts from now, so the fetch
	// and a first snapshot cannot eat the margin the push and the pull request need.
	vmCtx, cancel := context.WithDeadline(ctx, vmDeadline(r.grant.TokenExpiresAt, r.cfg.Now()))
	defer cancel()
	if r.needsImage() {
		if err := r.phase(vmCtx, evidence.PhaseEnvironment, 0, r.buildEnvironment); err != nil {
			return err
		}
	}
	if err := r.phase(vmCtx, evidence.PhaseBoot, 0, r.boot); err != nil {
		return err
	}
	if r.cfg.Stage == wire.StageReview {
		// A review run pushes and publishes nothing: its verdict goes to serve, which
		// posts the review and the bumper/verdict check run itself.
		return r.review(vmCtx)
	}
	if err := r.rounds(vmCtx); err != nil {
		return err
	}
	if r.cfg.Stage == wire.StagePlan {
		return r.phase(ctx, evidence.PhaseReport, 0, r.reportPlan)
	}
	if err := r.phase(ctx, evidence.PhasePush, 0, r.push); err != nil {
		return err
	}
	r.closeVM(ctx)
	if r.cfg.Stage == wire.StageFix {
		return r.phase(ctx, evidence.PhasePullRequest, 0, r.updatePull)
	}
	return r.phase(ctx, evidence.PhasePullRequest, 0, r.openPull)
}

// vmDeadline is when the VM's work must end: TokenMargin before the installation token
// expires (far away when its expiry is unknown).
func vmDeadline(tokenExpires, now time.Time) time.Time {
	if tokenExpires.IsZero() {
		return now.Add(24 * time.Hour)
	}
	return tokenExpires.Add(-TokenMargin)
}

// phase runs fn as one phase of the evidence: its times, outcome and detail, a log
// line, and the Phase call-back (log groups).
func (r *run) phase(ctx context.Context, name evidence.PhaseName, round int, fn func(ctx context.Context) (string, error)) error {
	start := r.cfg.Now().UTC()
	r.cfg.Phase(name, false, evidence.Phase{Name: name, Round: round, StartedAt: start})
	detail, err := fn(ctx)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	outcome := evidence.PhaseOK
	switch {
	case err == nil:
	case errors.Is(err, errStopped) || errors.Is(context.Cause(ctx), errStopped):
		outcome = evidence.PhaseCancelled
	case isTimeout(err):
		outcome = evidence.PhaseTimedOut
	default:
		outcome = evidence.PhaseFailed
	}
	if err != nil && detail == "" {
		detail = err.Error()
	}
	p := evidence.NewPhase(name, start, r.cfg.Now().UTC(), outcome)
	p.Round, p.Detail = round, cut(detail, maxLine)
	r.ev.Phases = append(r.ev.Phases, p)
	ev := zerolog.Ctx(ctx).Info()
	if err != nil {
		ev = zerolog.Ctx(ctx).Warn().Err(err)
	}
	ev.Str(logKeyPhase, string(name)).Int(logKeyRound, round).Dur(logKeyDuration, time.Duration(p.DurationMS)*time.Millisecond).Msg("phase ended")
	r.cfg.Phase(name, true, p)
	return err
}

// isTimeout says the run's wall time ran out.
func isTimeout(err error) bool {
	var oe *outcomeError
	return errors.As(err, &oe) && oe.outcome == evidence.OutcomeTimedOut
}

// maxLine is the evidence schema's bound on a line (a phase's detail, the outcome's
// reason).
const maxLine = 1000

// ellipsis ends a string cut short.
const ellipsis = textcut.Ellipsis

// cut shortens s to at most n bytes, ellipsis included, on a character boundary:
// within the evidence schema's limits, which count characters (never more than bytes).
func cut(s string, n int) string { return textcut.Fit(s, n, ellipsis) }
