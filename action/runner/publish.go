package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
)

// push bundles the work branch in the VM, checks the bundle on the host, and pushes it
// through the firewall's git gateway, which lets the run update its own branch only.
func (r *run) push(ctx context.Context) (string, error) {
	if r.head == r.start() {
		return "", failWith(evidence.OutcomeFailure, "the agent changed nothing: there is no commit to push")
	}
	// Whatever the agent left in /out under the bundle's name goes first: the host reads
	// only what this command wrote.
	bundle := strings.Join(append([]string{"rm -f", workspace.GuestBundle, workspace.GuestBundle + ".lock", "&&"}, r.ws.BundleCommand()...), " ")
	var out strings.Builder
	st, err := r.exec(ctx, []string{"sh", "-c", bundle}, nil, &out, &out)
	if err != nil {
		return "", err
	}
	if st.Code != 0 {
		return "", failWith(evidence.OutcomeError, "failed to bundle the work branch in the VM (exit %d): %s", st.Code, cut(out.String(), 500))
	}
	if err := r.collectOut(ctx); err != nil {
		return "", err
	}
	// The VM goes before pushes open: killing the agent's processes does not close its
	// sockets, and data it left queued in the guest's kernel could otherwise reach the
	// gateway while the runner's push is allowed. The firewall stays up for the push.
	if err := r.vm.Kill(); err != nil {
		return "", fmt.Errorf("failed to stop the VM before the push: %w", err)
	}
	res, err := r.ws.Result(ctx)
	switch {
	case errors.Is(err, workspace.ErrNoBundle):
		return "", failWith(evidence.OutcomeFailure, "the agent changed nothing: there is no commit to push")
	case err != nil:
		return "", failWith(evidence.OutcomeError, "failed to read the agent's work back: %w", err)
	case res.Head != r.head:
		// Verification runs the repository's own files, which the agent wrote: they may
		// move the branch. What was verified is what is pushed, or nothing is.
		return "", failWith(evidence.OutcomeFailure, "the work branch moved after the agent's last round (from %.12s to %.12s): refusing to push a commit verification did not judge", r.head, res.Head)
	}
	rw, err := r.rewrite(ctx, res.Head)
	if err != nil {
		return "", err
	}
	r.ev.HeadCommit, r.ev.VerifiedCommit, r.ev.Branch, r.ev.Diff = rw.Head, rw.Verified, r.ws.Branch, res.Diff
	r.ev.Risk = risk.Note(res.Diff.Paths())
	// The pull request's whole diff: a fix round's is from the base too.
	if diff, err := r.ws.Git(ctx, nil, 32<<20, "diff", "--no-ext-diff", "--no-textconv", "--binary", r.grant.BaseCommit+"..."+rw.Head, "--"); err == nil {
		_ = os.WriteFile(filepath.Join(r.cfg.Out, DiffFile), diff, 0o640)
	}
	if reason := r.stopped(); reason != "" {
		return "", fmt.Errorf("%w: %s; nothing was pushed", errStopped, reason)
	}
	// The branch is published too: a bundle that cannot be published stops the run here.
	if err := r.checkEvidence(ctx, "nothing was pushed"); err != nil {
		return "", err
	}
	// Pushes are closed while the agent runs; the runner opens them for its own push
	// only, with no process of the agent left in the VM.
	r.fw.SetPushOpen(true)
	defer r.fw.SetPushOpen(false)
	pushed, err := publish.Push(ctx, publish.Options{
		Workspace: r.ws, GitURL: "http://" + r.vm.ProxyAddr() + "/git/" + r.repo + ".git",
		Issue: r.issue, Attempt: r.cfg.Attempt, Branch: r.branch, Head: rw.Head, Permissions: r.grant.Permissions,
	})
	if err != nil {
		return "", failWith(evidence.OutcomeFailure, "%w", err)
	}
	r.pull.head = pushed.Head
	return fmt.Sprintf("%s at %.12s: %d commit(s), %d file(s) changed, +%d −%d", pushed.Branch, pushed.Head, res.Commits,
		res.Diff.FilesChanged, res.Diff.Insertions, res.Diff.Deletions), nil
}

// rewrite makes the agent's verified commits the App's before anything is pushed
// (publish.Rewrite): the same trees, the App as author and committer, messages that
// close, mention and cross-reference nothing. The App's noreply address carries its
// bot user's ID, asked of GitHub; without it the address has the login alone.
func (r *run) rewrite(ctx context.Context, head string) (*publish.Rewritten, error) {
	var botID int64
	if u, _, err := r.gh.Users.Get(ctx, r.grant.BotLogin); err == nil {
		botID = u.GetID()
	} else {
		zerolog.Ctx(ctx).Warn().Err(err).Str(logKeyBot, r.grant.BotLogin).Msg("failed to read the App's bot user; its commits carry its login without its ID")
	}
	id, err := publish.AppIdentity(r.grant.BotLogin, botID, r.cfg.ServerURL)
	if err != nil {
		return nil, failWith(evidence.OutcomeError, "failed to name the App's commits: %w", err)
	}
	rw, err := publish.Rewrite(ctx, publish.RewriteOptions{Workspace: r.ws, Head: head, Identity: id, Now: r.cfg.Now()})
	if err != nil {
		return nil, failWith(evidence.OutcomeError, "failed to make the agent's commits the App's; nothing was pushed: %w", err)
	}
	return rw, nil
}

// openPull opens the pull request as the App (the runner's client holds the run's
// installation token) with the evidence, and the bumper/evidence check run on its head.
func (r *run) openPull(ctx context.Context) (string, error) {
	if reason := r.stopped(); reason != "" {
		return "", fmt.Errorf("%w: %s; no pull request was opened", errStopped, reason)
	}
	r.fillEvidence(ctx)
	if err := r.checkEvidence(ctx, "no pull request was opened"); err != nil {
		return "", err
	}
	asPublished(r.ev, r.cfg.Now().UTC())
	pr, err := publish.OpenPullRequest(ctx, r.gh, publish.PullRequestOptions{
		Repository: r.repo, Issue: r.issue, Attempt: r.cfg.Attempt, Base: r.grant.BaseBranch, Title: r.task.Title,
		BotLogin: r.grant.BotLogin, Summary: r.summary(), Evidence: r.ev,
	})
	if err != nil {
		return "", err
	}
	if pr.HeadSHA != "" && pr.HeadSHA != r.pull.head {
		return "", fmt.Errorf("pull request #%d has head %.12s, not the pushed %.12s", pr.Number, pr.HeadSHA, r.pull.head)
	}
	r.pull.number, r.pull.url = pr.Number, pr.URL
	r.ev.PullRequest = pr.Number
	cr, err := publish.EvidenceCheckRun(ctx, r.gh, publish.CheckRunOptions{Repository: r.repo, Head: r.pull.head, Evidence: r.ev, ServerURL: r.cfg.ServerURL})
	if err != nil {
		return "", err
	}
	verb := "opened"
	if !pr.Created {
		verb = "found open"
	}
	return fmt.Sprintf("%s #%d; check run %s %s", verb, pr.Number, publish.EvidenceCheckName, cr.Conclusion), nil
}

// updatePull is a fix run's publication: the pushed commit is the head of the pull
// request the App opened on the branch (no new one is opened); the round's evidence is
// commented on it, and the bumper/evidence check run written on the new head.
func (r *run) updatePull(ctx context.Context) (string, error) {
	if reason := r.stopped(); reason != "" {
		return "", fmt.Errorf("%w: %s; nothing was posted on the pull request", errStopped, reason)
	}
	pr, err := publish.ExistingPull(ctx, r.gh, publish.ExistingPullOptions{
		Repository: r.repo, Number: r.grant.PullRequest, Branch: r.branch, Issue: r.issue, Head: r.pull.head, BotLogin: r.grant.BotLogin,
	})
	if err != nil {
		return "", err
	}
	r.pull.number, r.pull.url = pr.Number, pr.URL
	r.fillEvidence(ctx)
	if err := r.checkEvidence(ctx, "nothing was posted on the pull request"); err != nil {
		return "", err
	}
	asPublished(r.ev, r.cfg.Now().UTC())
	url, err := publish.CommentEvidence(ctx, r.gh, r.repo, pr.Number, r.summary(), r.ev)
	if err != nil {
		return "", err
	}
	cr, err := publish.EvidenceCheckRun(ctx, r.gh, publish.CheckRunOptions{Repository: r.repo, Head: r.pull.head, Evidence: r.ev, ServerURL: r.cfg.ServerURL})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("pushed to #%d, evidence commented (%s); check run %s %s", pr.Number, url, publish.EvidenceCheckName, cr.Conclusion), nil
}

// summary is the runner's own paragraph at the top of the pull request.
func (r *run) summary() string {
	var b strings.Builder
	if r.cfg.Stage == wire.StageFix {
		fmt.Fprintf(&b, "Bumper's fix round (attempt %d) for the failing checks of #%d: a commit on top of %.12s, made in a microVM behind a default-deny firewall", r.cfg.Attempt, r.issue, r.grant.HeadCommit)
		if n := len(r.ev.Tests); n > 0 {
			fmt.Fprintf(&b, "; the repository's verification passed in round %d", r.ev.Tests[n-1].Round)
		}
		b.WriteString(". The evidence below is this round's.")
		return b.String()
	}
	fmt.Fprintf(&b, "Bumper's agent worked on #%d (attempt %d) in a microVM behind a default-deny firewall", r.issue, r.cfg.Attempt)
	if n := len(r.ev.Tests); n > 0 {
		fmt.Fprintf(&b, "; the repository's verification passed in round %d", r.ev.Tests[n-1].Round)
	}
	b.WriteString(". Review it like any contribution: the evidence below says what ran, what it reached and what it decided where the issue was silent.")
	return b.String()
}

// reportPlan posts a plan run's plan, which the guest left in /out.
func (r *run) reportPlan(ctx context.Context) (string, error) {
	if err := r.collectOut(ctx); err != nil {
		return "", err
	}
	plan, err := readSmall(filepath.Join(r.ws.OutDir, PlanFile), MaxPlanBytes)
	if err != nil {
		return "", failWith(evidence.OutcomeFailure, "the plan run left no usable /out/%s: %w", PlanFile, err)
	}
	if strings.TrimSpace(string(plan)) == "" {
		return "", failWith(evidence.OutcomeFailure, "the plan run left an empty /out/%s", PlanFile)
	}
	_ = os.WriteFile(filepath.Join(r.cfg.Out, PlanFile), plan, 0o640)
	if err := r.progress(ctx, "awaiting-approval", string(plan)); err != nil {
		return "", err
	}
	return fmt.Sprintf("posted a plan of %d bytes for approval", len(plan)), nil
}

// progress reports a state to serve.
func (r *run) progress(ctx context.Context, state, plan string) error {
	if err := r.client().Progress(ctx, wire.Progress{State: state, Plan: plan, PullRequest: r.pullNumber(), HeadCommit: r.pullHead()}); err != nil {
		return fmt.Errorf("failed to report %s to serve: %w", state, err)
	}
	return nil
}

// pullHead is the pushed head once there is a pull request to name with it.
func (r *run) pullHead() string {
	if r.pull.number == 0 {
		return ""
	}
	return r.pull.head
}

// pullNumber is the pull request a progress report names: only once the run pushed
// the head it names with it (a fix run knows its pull request from the start, but
// reports it only with its new head).
func (r *run) pullNumber() int {
	if r.pull.head == "" {
		return 0
	}
	return r.pull.number
}

// overBudget fails the run once the firewall refused a model call for want of budget.
func (r *run) overBudget() error {
	if r.fw == nil {
		return nil
	}
	u, ok := r.fw.Usage()
	if !ok || u.Refused == 0 {
		return nil
	}
	return failWith(evidence.OutcomeOverBudget, "the run's model budget of $%.2f is spent ($%.4f metered over %d calls; %d refused)", u.BudgetUSD, u.SpentUSD, u.Calls, u.Refused)
}
