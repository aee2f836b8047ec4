package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
)

// push bundles the work branch in the VM, checks the bundle on the host, and pushes it
// through the firewall's git gateway, which lets the run update its own branch only.
// head is the commit verification judged; m what an update run's merge left to resolve.
// It returns the head it pushed.
func (r *run) push(ctx context.Context, vm *guest, head string, m merged) (string, string, error) {
	if head == r.start() {
		return "", "", failWith(evidence.OutcomeFailure, "the agent changed nothing: there is no commit to push")
	}
	ws := vm.ws
	res, err := r.takeWork(ctx, vm, head)
	if err != nil {
		return "", "", err
	}
	if err := r.checkResolved(ctx, ws, res.Head, m); err != nil {
		return "", "", err
	}
	rw, err := r.rewrite(ctx, ws, res.Head)
	if err != nil {
		return "", "", err
	}
	ev := r.rec.ev
	ev.HeadCommit, ev.VerifiedCommit, ev.Branch, ev.Diff = rw.Head, rw.Verified, ws.Branch, res.Diff
	ev.Risk = risk.Note(res.Diff.Paths())
	// The output gates judge what would be published, as rewritten; a blocking finding
	// ends the run here. Their time is a phase of its own: what they cost each run.
	var found *gates.Result
	if err := r.rec.phase(ctx, evidence.PhaseGates, 0, func(ctx context.Context) (detail string, err error) {
		found, detail, err = r.gate(ctx, ws, ws.OutDir, r.gateBase(), rw.Head)
		return detail, err
	}); err != nil {
		return "", "", err
	}
	// The pull request's whole diff: a fix round's is from the base too.
	if diff, err := ws.Git(ctx, nil, 32<<20, "diff", "--no-ext-diff", "--no-textconv", "--binary", r.grant.BaseCommit+"..."+rw.Head, "--"); err == nil {
		r.rec.keep(DiffFile, diff)
	}
	if reason := r.link.stopped(); reason != "" {
		return "", "", fmt.Errorf("%w: %s; nothing was pushed", errStopped, reason)
	}
	// The branch is published too: a bundle that cannot be published stops the run here.
	if err := checkEvidence(ctx, ev, r.cfg.Now().UTC(), "nothing was pushed"); err != nil {
		return "", "", err
	}
	pushed, err := r.publish(ctx, vm, ws, rw.Head)
	if err != nil {
		return "", "", err
	}
	ev.HeadCommit = pushed.Head
	if err := r.gatesCheckRun(ctx, pushed.Head, found); err != nil {
		return "", "", failWith(evidence.OutcomeError, "pushed %.12s, but %w", pushed.Head, err)
	}
	return pushed.Head, fmt.Sprintf("%s at %.12s: %d commit(s), %d file(s) changed, +%d −%d", pushed.Branch, pushed.Head, res.Commits,
		res.Diff.FilesChanged, res.Diff.Insertions, res.Diff.Deletions), nil
}

// gateBase is where what the run would publish starts: the commit the run started
// from, or for an update round the base branch's head it merged (what the pull request
// changes against it; the base branch's own changes are not the agent's).
func (r *run) gateBase() string {
	if rd := r.rec.ev.Round; rd != nil && rd.Merge != nil && workspace.IsCommitID(rd.Merge.To) {
		return rd.Merge.To
	}
	return r.start()
}

// takeWork brings the agent's work back to the host: the work branch bundled in the VM
// and read back with /out, the VM killed, and the bundle checked: its head must be head,
// the commit verification judged.
func (r *run) takeWork(ctx context.Context, vm *guest, head string) (*workspace.Result, error) {
	// Whatever the agent left in /out under the bundle's name goes first: the host reads
	// only what this command wrote.
	bundle := strings.Join(append([]string{"rm -f", workspace.GuestBundle, workspace.GuestBundle + ".lock", "&&"}, vm.ws.BundleCommand()...), " ")
	var out strings.Builder
	st, err := vm.exec(ctx, []string{"sh", "-c", bundle}, nil, &out, &out)
	if err != nil {
		return nil, err
	}
	if !st.OK() {
		// The status says why when the guest refused the command (processes it could
		// not end, say), not only an exit code.
		return nil, failWith(evidence.OutcomeError, "failed to bundle the work branch in the VM (it %s): %s", st, cut(out.String(), 500))
	}
	if err := vm.collectOut(ctx, r.rec); err != nil {
		return nil, err
	}
	// The VM goes before pushes open: killing the agent's processes does not close its
	// sockets, and data it left queued in the guest's kernel could otherwise reach the
	// gateway while the runner's push is allowed. The firewall stays up for the push.
	if err := vm.s.Kill(); err != nil {
		return nil, fmt.Errorf("failed to stop the VM before the push: %w", err)
	}
	res, err := vm.ws.Result(ctx)
	switch {
	case errors.Is(err, workspace.ErrNoBundle):
		return nil, failWith(evidence.OutcomeFailure, "the agent changed nothing: there is no commit to push")
	case errors.Is(err, workspace.ErrNotMerged):
		return nil, failWith(evidence.OutcomeFailure, "%w; nothing was pushed", err)
	case err != nil:
		return nil, failWith(evidence.OutcomeError, "failed to read the agent's work back: %w", err)
	case res.Head != head:
		// Verification runs the repository's own files, which the agent wrote: they may
		// move the branch. What was verified is what is pushed, or nothing is.
		return nil, failWith(evidence.OutcomeFailure, "the work branch moved after the agent's last round (from %.12s to %.12s): refusing to push a commit verification did not judge", head, res.Head)
	}
	return res, nil
}

// rewrite makes the agent's verified commits the App's before anything is pushed
// (publish.Rewrite): the same trees, the App as author and committer, messages that
// close, mention and cross-reference nothing. The App's noreply address carries its
// bot user's ID, asked of GitHub; without it the address has the login alone.
func (r *run) rewrite(ctx context.Context, ws *workspace.Workspace, head string) (*publish.Rewritten, error) {
	g := r.grant
	var botID int64
	if u, _, err := g.gh.Users.Get(ctx, g.BotLogin); err == nil {
		botID = u.GetID()
	} else {
		zerolog.Ctx(ctx).Warn().Err(err).Str(logKeyBot, g.BotLogin).Msg("failed to read the App's bot user; its commits carry its login without its ID")
	}
	id, err := publish.AppIdentity(g.BotLogin, botID, r.cfg.ServerURL)
	if err != nil {
		return nil, failWith(evidence.OutcomeError, "failed to name the App's commits: %w", err)
	}
	rw, err := publish.Rewrite(ctx, publish.RewriteOptions{Workspace: ws, Head: head, Identity: id, Now: r.cfg.Now()})
	if err != nil {
		return nil, failWith(evidence.OutcomeError, "failed to make the agent's commits the App's; nothing was pushed: %w", err)
	}
	return rw, nil
}

// publish publishes the round's rewritten commits: through GitHub's Git Data API with
// the runner's own client (the installation token, on the host), so that GitHub signs
// them as the App's; a change past the API's bounds is pushed with git through the
// firewall's git gateway instead, unsigned, unless the base branch or the work branch
// requires signed commits. The evidence says which.
func (r *run) publish(ctx context.Context, vm *guest, ws *workspace.Workspace, head string) (*publish.Pushed, error) {
	o := publish.Options{
		Workspace: ws, GitURL: "http://" + vm.s.ProxyAddr() + "/git/" + r.cfg.WorkItem.Repository + ".git",
		Issue: r.cfg.WorkItem.Issue, Attempt: r.cfg.Attempt, Branch: r.grant.branch, Head: head, Permissions: r.grant.Permissions,
	}
	if r.cfg.Stage != wire.StageImplement {
		// A round on a pull request moves its branch on from the head it started at,
		// as the firewall's push_from holds a push to.
		o.From = r.grant.HeadCommit
	}
	// Pushes are closed while the agent runs; the runner opens them for its own push
	// only, with no process of the agent left in the VM.
	pushed, err := publish.PublishOrPush(ctx, r.grant.gh, o, r.grant.BaseBranch, func() func() {
		vm.s.fw.SetPushOpen(true)
		return func() { vm.s.fw.SetPushOpen(false) }
	})
	if err != nil {
		return nil, failWith(evidence.OutcomeFailure, "%w", err)
	}
	r.rec.ev.PublishedVia, r.rec.ev.PublishedNote = pushed.Via, cut(pushed.Note, maxLine)
	return pushed, nil
}
