package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/app/wire"
)

// finishTimeout bounds what the run does after its last phase: revoking the token,
// writing the evidence and reporting it, even when the run itself was cancelled.
const finishTimeout = 2 * time.Minute

// finish ends the run with what its phases made, whatever happened: the VM and the
// firewall down, the token revoked, the evidence written to Out and reported to serve.
func finish(ctx context.Context, cfg Config, rec *recorder, p *produced, runErr error) (*Result, error) {
	log := zerolog.Ctx(ctx)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	runErr = p.halt(fctx, rec, runErr)
	if p.ws != nil {
		defer p.ws.Close()
	}
	outcome, reason := classify(runErr)
	// The reason may quote what the agent left (a tool's error, a path); it goes where
	// the evidence goes.
	reason = evidence.RedactText(reason)
	if cfg.Stage == wire.StageReview && p.granted != nil {
		noteReviewProblem(rec.ev, p.granted.HeadCommit, p.review, reason)
	}
	if p.session != nil {
		p.session.settle(fctx, rec.ev, rec.out)
	}
	if p.granted != nil {
		_ = rec.phase(fctx, evidence.PhaseRevoke, 0, func(ctx context.Context) (string, error) {
			detail, err := revoke(ctx, cfg, rec.ev, p.granted.InstallationToken)
			if p.granted.DependencyToken == "" {
				return detail, err
			}
			// The dependency token is revoked whatever became of the run's.
			if derr := publish.Revoke(ctx, cfg.APIURL, p.granted.DependencyToken, cfg.HTTPClient); !publish.Revoked(derr) {
				return detail, errors.Join(err, fmt.Errorf("failed to revoke the dependency token: %w", derr))
			}
			return detail + "; the dependency token is revoked", err
		})
	}
	rec.ev.Outcome, rec.ev.OutcomeReason = outcome, cut(reason, maxLine)
	if p.link != nil {
		rec.ev.Steers = p.link.steers.close()
	}
	rec.ev.Finish(cfg.Now().UTC())
	res := &Result{Outcome: outcome, Reason: reason, PullRequest: p.pullNumber(cfg.Stage), Evidence: rec.ev, CostMicroUSD: rec.ev.Cost.MeteredMicroUSD}
	if p.pull != nil {
		res.PullURL = p.pull.url
	}
	digest, werr := writeEvidence(fctx, rec)
	res.Digest = digest
	if werr != nil {
		log.Error().Err(werr).Msg("failed to write the evidence")
		runErr = errors.Join(runErr, werr)
	}
	if p.link != nil {
		if err := tellServe(fctx, cfg, rec, p, digest, outcome, reason); err != nil {
			runErr = errors.Join(runErr, err)
		}
		res.Attestation = p.attestation
	}
	log.Info().Str(logKeyOutcome, string(outcome)).Str(logKeyReason, reason).Int(logKeyPull, res.PullRequest).Msg("run ended")
	return res, runErr
}

// halt ends what is left of the VM: it reads back /out of a VM that booted (the
// decision ledger of a run that failed before the push: what the agent decided is
// evidence too), shuts the session down, and returns the run's error, which says first
// when the model budget ran out.
func (p *produced) halt(ctx context.Context, rec *recorder, runErr error) error {
	if p.guest != nil {
		if err := p.guest.collectOut(ctx, rec); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to read the VM's /out after the run failed")
		}
	}
	if p.session == nil {
		return runErr
	}
	p.session.shutDown(ctx)
	// A run that failed because its budget ran out says so first (an agent that gave
	// up on a refused call fails for that reason), once.
	var already *outcomeError
	if runErr != nil && !(errors.As(runErr, &already) && already.outcome == evidence.OutcomeOverBudget) {
		if err := p.session.overBudget(); err != nil && !errors.Is(runErr, errStopped) {
			runErr = fmt.Errorf("%w (%w)", err, runErr)
		}
	}
	return runErr
}

// tellServe reports the run to serve (report) when there is evidence to report, and a
// review run's verdict however the report went: serve hears that a review has no
// verdict, and why. The error says what serve did not hear.
func tellServe(ctx context.Context, cfg Config, rec *recorder, p *produced, digest string, outcome evidence.Outcome, reason string) error {
	log := zerolog.Ctx(ctx)
	var errs []error
	verdictSent := false
	if cfg.Stage != wire.StagePlan && digest != "" {
		var err error
		if verdictSent, err = report(ctx, cfg, rec, p, digest, outcome, reason); err != nil {
			log.Error().Err(err).Msg("failed to report to serve")
			errs = append(errs, err)
		}
	}
	if cfg.Stage == wire.StageReview && !verdictSent {
		if err := sendVerdict(ctx, p.link, p.granted.HeadCommit, p.review, reason); err != nil {
			log.Error().Err(err).Msg("failed to send the verdict to serve")
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// classify maps a run's error to its outcome and reason.
func classify(err error) (evidence.Outcome, string) {
	if err == nil {
		return evidence.OutcomeSuccess, ""
	}
	var oe *outcomeError
	switch {
	case errors.As(err, &oe):
		return oe.outcome, err.Error()
	case errors.Is(err, errStopped):
		return evidence.OutcomeStopped, err.Error()
	default:
		return evidence.OutcomeFailure, err.Error()
	}
}

// wireReason is the run's reason as serve takes it: valid UTF-8 (a failed setup's
// reason quotes what the repository's script printed) of at most wire.MaxReason bytes.
func wireReason(reason string) string {
	return cut(strings.ToValidUTF8(reason, "\uFFFD"), wire.MaxReason)
}

// revoke revokes the installation token (DELETE /installation/token).
func revoke(ctx context.Context, cfg Config, ev *evidence.Evidence, token string) (string, error) {
	err := publish.Revoke(ctx, cfg.APIURL, token, cfg.HTTPClient)
	if publish.Revoked(err) {
		ev.Revocation = evidence.Revocation{Revoked: true, At: cfg.Now().UTC()}
		return "the installation token is revoked", nil
	}
	ev.Revocation = evidence.Revocation{Reason: cut(err.Error(), 500)}
	return "", err
}

// report sends the evidence's digest, cost and audit head to serve: a review run's
// verdict after it (it says whether serve has the verdict), and, when the pull request
// is open, the item on to its review.
func report(ctx context.Context, cfg Config, rec *recorder, p *produced, digest string, outcome evidence.Outcome, reason string) (verdictSent bool, err error) {
	// The pull request goes with the progress that hands it to review, where the App
	// checks it; named here too, it would be read back from GitHub twice.
	e := wire.Evidence{Digest: digest, ImageDigest: p.imageDigest(cfg), CostMicroUSD: rec.ev.Cost.MeteredMicroUSD,
		Outcome: string(outcome), Reason: wireReason(reason), Steers: p.link.steers.deliveries(), Claims: runnerClaims(rec.ev)}
	if a := rec.ev.Audit; a != nil {
		e.AuditHead = a.Head
	}
	// The head a writing run published, with its pull request: serve checks it on
	// GitHub before it signs a statement about it.
	if pull := p.pullNumber(cfg.Stage); outcome == evidence.OutcomeSuccess && pull > 0 && p.pushed != "" && cfg.Stage != wire.StageReview {
		e.PullRequest, e.HeadCommit = pull, p.pushed
	}
	err = rec.phase(ctx, evidence.PhaseReport, 0, func(ctx context.Context) (string, error) {
		receipt, err := p.link.client().Evidence(ctx, e)
		if err != nil {
			return "", fmt.Errorf("failed to report the evidence: %w", err)
		}
		if p.attestation, err = keepAttestation(rec.out, receipt); err != nil {
			// The report went through; the statement is missing from the artifact,
			// which verification then says.
			zerolog.Ctx(ctx).Error().Err(err).Msg("failed to keep serve's statement")
		}
		if cfg.Stage == wire.StageReview {
			// The evidence first, then the verdict: serve posts the review with both.
			if err := sendVerdict(ctx, p.link, p.granted.HeadCommit, p.review, reason); err != nil {
				return "", err
			}
			verdictSent = true
			if p.review.doc == nil {
				return "reported the evidence; no verdict, and why", nil
			}
			return "reported the evidence and the verdict", nil
		}
		pull := p.pullNumber(cfg.Stage)
		if outcome != evidence.OutcomeSuccess || pull == 0 {
			return "reported the evidence", nil
		}
		state := "reviewing"
		if !p.grant.policy.ReviewerOn() {
			state = "in-review"
		}
		if err := p.link.progress(ctx, state, "", pull, p.pushed); err != nil {
			return "", err
		}
		return "reported the evidence; the item is " + state, nil
	})
	return verdictSent, err
}
