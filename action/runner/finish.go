package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/firewall/audit"
)

// finishTimeout bounds what the run does after its last phase: revoking the token,
// writing the evidence and reporting it, even when the run itself was cancelled.
const finishTimeout = 2 * time.Minute

// finish ends the run whatever happened: the VM and the firewall down, the token
// revoked, the evidence written to Out and reported to serve.
func (r *run) finish(ctx context.Context, runErr error) (*Result, error) {
	log := zerolog.Ctx(ctx)
	if runErr != nil && context.Cause(ctx) != nil && !errors.Is(runErr, context.Cause(ctx)) {
		runErr = fmt.Errorf("%w (%w)", context.Cause(ctx), runErr)
	}
	r.cancel(nil)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if !r.collected && r.ws != nil && r.vmStarted {
		// The decision ledger of a run that failed before the push: what the agent
		// decided is evidence too.
		if err := r.collectOut(fctx); err != nil {
			log.Warn().Err(err).Msg("failed to read the VM's /out after the run failed")
		}
	}
	r.closeVM(fctx)
	if r.ws != nil {
		defer r.ws.Close()
	}
	// A run that failed because its budget ran out says so first (an agent that gave
	// up on a refused call fails for that reason), once.
	var already *outcomeError
	if runErr != nil && r.fw != nil && !(errors.As(runErr, &already) && already.outcome == evidence.OutcomeOverBudget) {
		if err := r.overBudget(); err != nil && !errors.Is(runErr, errStopped) {
			runErr = fmt.Errorf("%w (%w)", err, runErr)
		}
	}
	outcome, reason := classify(runErr)
	// The reason may quote what the agent left (a tool's error, a path); it goes where
	// the evidence goes.
	reason = evidence.RedactText(reason)
	r.noteReviewProblem(reason)
	r.fillEvidence(fctx)
	if r.exchanged {
		_ = r.phase(fctx, evidence.PhaseRevoke, 0, r.revoke)
	}
	r.ev.Outcome, r.ev.OutcomeReason = outcome, cut(reason, maxLine)
	r.ev.Finish(r.cfg.Now().UTC())
	res := &Result{Outcome: outcome, Reason: reason, PullRequest: r.pull.number, PullURL: r.pull.url, Evidence: r.ev, CostMicroUSD: r.ev.Cost.MeteredMicroUSD}
	digest, werr := r.writeEvidence(fctx)
	res.Digest = digest
	if werr != nil {
		log.Error().Err(werr).Msg("failed to write the evidence")
		runErr = errors.Join(runErr, werr)
	}
	if r.client() != nil && r.cfg.Stage != wire.StagePlan && digest != "" {
		if err := r.report(fctx, digest, outcome, reason); err != nil {
			log.Error().Err(err).Msg("failed to report to serve")
			runErr = errors.Join(runErr, err)
		}
	}
	if r.client() != nil && r.cfg.Stage == wire.StageReview && !r.verdictSent {
		// Whatever happened (no evidence written, the report refused), serve hears
		// that this review has no verdict, and why.
		if err := r.sendVerdict(fctx, reason); err != nil {
			log.Error().Err(err).Msg("failed to send the verdict to serve")
			runErr = errors.Join(runErr, err)
		}
	}
	log.Info().Str(logKeyOutcome, string(outcome)).Str(logKeyReason, reason).Int(logKeyPull, r.pull.number).Msg("run ended")
	return res, runErr
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
func (r *run) revoke(ctx context.Context) (string, error) {
	err := publish.Revoke(ctx, r.cfg.APIURL, r.grant.InstallationToken, r.cfg.HTTPClient)
	if publish.Revoked(err) {
		r.ev.Revocation = evidence.Revocation{Revoked: true, At: r.cfg.Now().UTC()}
		return "the installation token is revoked", nil
	}
	r.ev.Revocation = evidence.Revocation{Reason: cut(err.Error(), 500)}
	return "", err
}

// report sends the evidence's digest, cost and audit head to serve, and, when the pull
// request is open, moves the item on to its review.
func (r *run) report(ctx context.Context, digest string, outcome evidence.Outcome, reason string) error {
	// The pull request goes with the progress that hands it to review, where the App
	// checks it; named here too, it would be read back from GitHub twice.
	e := wire.Evidence{Digest: digest, ImageDigest: r.imageDigest, CostMicroUSD: r.ev.Cost.MeteredMicroUSD,
		Outcome: string(outcome), Reason: wireReason(reason)}
	if a := r.ev.Audit; a != nil {
		e.AuditHead = a.Head
	}
	return r.phase(ctx, evidence.PhaseReport, 0, func(ctx context.Context) (string, error) {
		if err := r.client().Evidence(ctx, e); err != nil {
			return "", fmt.Errorf("failed to report the evidence: %w", err)
		}
		if r.cfg.Stage == wire.StageReview {
			// The evidence first, then the verdict: serve posts the review with both.
			if err := r.sendVerdict(ctx, reason); err != nil {
				return "", err
			}
			if r.verdictDoc == nil {
				return "reported the evidence; no verdict, and why", nil
			}
			return "reported the evidence and the verdict", nil
		}
		if outcome != evidence.OutcomeSuccess || r.pull.number == 0 {
			return "reported the evidence", nil
		}
		state := "reviewing"
		if !r.policy.ReviewerOn() {
			state = "in-review"
		}
		if err := r.progress(ctx, state, ""); err != nil {
			return "", err
		}
		return "reported the evidence; the item is " + state, nil
	})
}

// fillEvidence adds what the firewall and the VM know: cost, egress, the audit head,
// how the VM booted.
func (r *run) fillEvidence(ctx context.Context) {
	if r.filled {
		// Filled after the firewall stopped (the pull request's evidence): nothing of it
		// changes after that, and the audit log need not be read and verified again.
		return
	}
	if r.vm != nil && r.ev.Sandbox != nil {
		rep := r.vm.Report()
		r.ev.Sandbox.Boot, r.ev.Sandbox.BootReason = rep.Boot.Mode, rep.Boot.Reason
	}
	if r.fw == nil {
		return
	}
	if u, ok := r.fw.Usage(); ok {
		r.ev.Cost.MeteredMicroUSD = int64(math.Round(u.SpentUSD * 1e6))
		r.ev.Cost.MeteredCalls = int64(u.Calls)
		r.ev.Cost.Estimated, r.ev.Cost.EstimatedCalls = u.Estimated > 0, int64(u.Estimated)
		r.ev.Cost.BudgetMicroUSD = int64(math.Round(u.BudgetUSD * 1e6))
		if self := r.ev.Cost.SelfReportedMicroUSD; self != nil {
			r.ev.Cost.SelfReportedDisagrees = evidence.Disagree(*self, r.ev.Cost.MeteredMicroUSD)
		}
	}
	h, ok := r.fw.AuditHead()
	if !ok {
		return
	}
	r.ev.Audit = &evidence.Audit{Head: "sha256:" + h.Hash, Entries: int64(h.Lines)}
	entries, err := readAudit(filepath.Join(r.cfg.Out, AuditFile), h.Hash)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to read the audit log for the egress summary")
		return
	}
	r.ev.Egress = evidence.SummarizeEgress(entries)
	r.filled = r.vmClosed
}

// readAudit reads the firewall's audit log into what the egress summary needs, checking
// its chain up to head, the firewall's own last hash (the chain alone cannot tell that
// the last line was changed). The firewall has stopped when this runs, its log flushed.
func readAudit(path, head string) ([]evidence.AuditEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := audit.Verify(f, head); err != nil {
		return nil, fmt.Errorf("the run's audit log does not verify: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	var out []evidence.AuditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Kind      string `json:"kind"`
			Target    string `json:"target"`
			Allowed   bool   `json:"allowed"`
			Reason    string `json:"reason"`
			BytesUp   int64  `json:"bytes_up"`
			BytesDown int64  `json:"bytes_down"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("failed to read an audit line: %w", err)
		}
		out = append(out, evidence.AuditEntry{Kind: line.Kind, Target: line.Target, Allowed: line.Allowed, Reason: line.Reason, BytesUp: line.BytesUp, BytesDown: line.BytesDown})
	}
	return out, sc.Err()
}

// writeEvidence redacts and validates the evidence and writes evidence.json and
// evidence.md to Out; it returns the digest. Evidence that fails validation is still
// written (an operator needs it most then), redacted, and the error says why it failed.
func (r *run) writeEvidence(ctx context.Context) (string, error) {
	if err := r.redactEvidence(ctx); err != nil {
		return "", err
	}
	verr := r.ev.Validate()
	data, err := r.ev.Marshal()
	if err != nil {
		return "", fmt.Errorf("failed to encode the evidence: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.cfg.Out, EvidenceFile), data, 0o640); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", EvidenceFile, err)
	}
	md, _ := evidencemd.Render(r.ev, evidencemd.CommentLimit)
	if err := os.WriteFile(filepath.Join(r.cfg.Out, EvidenceMarkdownFile), []byte(md), 0o640); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", EvidenceMarkdownFile, err)
	}
	digest, err := r.ev.Digest()
	if err != nil {
		return "", err
	}
	if verr != nil {
		return digest, fmt.Errorf("the evidence does not validate: %w", verr)
	}
	return digest, nil
}

// redactEvidence replaces what looks like a secret in the evidence (evidence.Redact),
// object keys included: the bundle quotes what the agent and the repository wrote (the
// decision ledger, commands, test output, tool names, paths, the hosts it asked for), and
// it is validated, published and written only redacted. The log says where, never what.
func (r *run) redactEvidence(ctx context.Context) error {
	paths, err := r.ev.Redact()
	if err != nil {
		return fmt.Errorf("failed to redact the evidence: %w", err)
	}
	if len(paths) > 0 {
		zerolog.Ctx(ctx).Warn().Strs(logKeyPaths, paths).Msg("redacted secret-looking text in the evidence")
	}
	return nil
}

// checkEvidence redacts the evidence and validates it as it is about to be published
// (asPublished): a bundle that still does not validate fails the run before anything
// more is published, and nothing says what was not.
func (r *run) checkEvidence(ctx context.Context, nothing string) error {
	if err := r.redactEvidence(ctx); err != nil {
		return failWith(evidence.OutcomeError, "%w; %s", err, nothing)
	}
	c := *r.ev
	asPublished(&c, r.cfg.Now().UTC())
	if err := c.Validate(); err != nil {
		return failWith(evidence.OutcomeError, "the evidence does not validate, so %s: %w", nothing, err)
	}
	return nil
}

// asPublished is the evidence as the pull request shows it: the run a success, its
// token revoked after it was posted.
func asPublished(e *evidence.Evidence, now time.Time) {
	e.Outcome = evidence.OutcomeSuccess
	e.Revocation = evidence.Revocation{Reason: "revoked when the run ends, after this was posted; the run's artifact holds the final evidence.json"}
	e.Finish(now)
}

// pollStop asks serve every StopPoll whether to stop; when it says so, or refuses the
// run's token (the run is over as far as serve knows), the run's context ends with
// errStopped and the VM is killed at once. It also refreshes the run token once half of
// its life is gone, so a run may outlive one token.
func (r *run) pollStop(ctx context.Context) {
	t := time.NewTicker(r.cfg.StopPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.refreshToken(ctx)
		st, err := r.client().ShouldStop(ctx)
		var refused *appclient.Refused
		switch {
		case errors.As(err, &refused):
			st = wire.ShouldStop{Stop: true, Reason: "serve refused the run's token: " + refused.Reason}
		case err != nil:
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to ask serve whether to stop")
			continue
		}
		if !st.Stop {
			continue
		}
		reason := st.Reason
		if reason == "" {
			reason = "serve said stop"
		}
		r.stopMu.Lock()
		r.stopReason = reason
		r.stopMu.Unlock()
		zerolog.Ctx(ctx).Info().Str(logKeyReason, reason).Msg("stopping: killing the VM")
		r.cancel(fmt.Errorf("%w: %s", errStopped, reason))
		if vm := r.session(); vm != nil {
			_ = vm.Kill()
		}
		return
	}
}

// refreshToken gets a new run token once the current one has lived half its life.
func (r *run) refreshToken(ctx context.Context) {
	r.tokenMu.Lock()
	due := r.cfg.Now().After(r.tokenIssued.Add(r.tokenExpires.Sub(r.tokenIssued) / 2))
	r.tokenMu.Unlock()
	if !due {
		return
	}
	fresh, err := r.client().Refresh(ctx)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to refresh the run token")
		return
	}
	// Not masked: bumper never prints a run token, and an ::add-mask:: line printed while
	// the agent's output is quoted (::stop-commands::) would print it in clear.
	r.tokenMu.Lock()
	r.serve = r.serve.WithRunToken(fresh.RunToken)
	r.tokenIssued, r.tokenExpires = r.cfg.Now(), fresh.RunTokenExpiresAt
	r.tokenMu.Unlock()
}

// client is serve's client with the current run token.
func (r *run) client() *appclient.Client {
	r.tokenMu.Lock()
	defer r.tokenMu.Unlock()
	return r.serve
}

// stopped is serve's reason to stop, once it said so.
func (r *run) stopped() string {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	return r.stopReason
}
