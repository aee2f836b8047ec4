package workitem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/runidentity"
)

// RunTokenSigner signs run tokens.
type RunTokenSigner interface {
	Sign(c wire.RunClaims) (string, time.Time, error)
}

// planPermissions are a plan run's: it reads the code and reports through call-backs.
var planPermissions = map[string]string{"contents": "read"}

// Exchange checks a runner's verified identity and nonce against the work item and
// hands out the run's credentials. Every refusal is a *Refusal. The steps run in this
// order, each refusing what it checks; the record is written only to void an approval
// that no longer holds, or to spend the nonce once every check has passed.
func (s *Service) Exchange(ctx context.Context, id Identity, req wire.ExchangeRequest) (wire.ExchangeResponse, error) {
	// A run can ask before its attempt is on the record: the dispatch goes out first (its
	// run ID is GitHub's answer to it) and the record is written after, by whichever
	// replica dispatched. So an attempt ahead of the record is asked about again for a
	// few seconds, with the item's lock let go meanwhile, before it is refused.
	// Wall time, not the service's clock: this is a wait for another process.
	deadline := time.Now().Add(attemptAheadWait)
	for {
		resp, err := s.exchange(ctx, id, req)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Kind() != RefusalAttempt || !s.attemptAhead(ctx, req) || !time.Now().Before(deadline) {
			return resp, err
		}
		t := time.NewTimer(attemptAheadPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, err
		case <-t.C:
		}
	}
}

// How long, and how often, Exchange asks again about an attempt the record does not
// hold yet.
const (
	attemptAheadWait = 5 * time.Second
	attemptAheadPoll = 250 * time.Millisecond
)

// attemptAhead reports whether the exchange asks for an attempt after the record's
// current one (not yet recorded, rather than over).
func (s *Service) attemptAhead(ctx context.Context, req wire.ExchangeRequest) bool {
	w, err := wire.ParseWorkItem(req.WorkItem)
	if err != nil {
		return false
	}
	_, it, err := s.runItem(ctx, w)
	if err != nil {
		return false
	}
	cur := it.rec.CurrentAttempt()
	return cur == nil || req.Attempt > cur.Number
}

// exchange is one try of Exchange.
func (s *Service) exchange(ctx context.Context, id Identity, req wire.ExchangeRequest) (wire.ExchangeResponse, error) {
	var none wire.ExchangeResponse
	w, err := wire.ParseWorkItem(req.WorkItem)
	if err != nil {
		return none, refuse(RefusalBadRequest, "%v", err)
	}
	if err := runidentity.DispatchedBy(id, w); err != nil {
		return none, err
	}
	defer s.lock(w.String())()
	gh, it, err := s.runItem(ctx, w)
	if err != nil {
		return none, err
	}
	att, err := runidentity.DispatchedRun(id, it.rec, req, s.opts.Workflow)
	if err != nil {
		return none, err
	}
	perms, err := s.mayStart(it.rec, att)
	if err != nil {
		return none, err
	}
	if err := s.approvedStillHolds(ctx, gh, it, att); err != nil {
		return none, err
	}
	deps, err := s.dependenciesHold(ctx, gh, it, att)
	if err != nil {
		return none, err
	}
	if by, err := s.pausedBy(ctx, gh, it.repo.FullName); err != nil {
		return none, err
	} else if by != "" {
		if err := s.hold(ctx, it, att, by); err != nil {
			return none, err
		}
		if err := s.save(ctx, gh, it, ""); err != nil {
			return none, err
		}
		return none, refuse(RefusalPaused, "paused by %s", by)
	}
	budget, err := s.runBudget(ctx, gh, it, att)
	if err != nil {
		return none, err
	}
	att.ReservedMicroUSD = budget
	// Learned before the nonce is spent, so a failure here leaves the attempt usable.
	bot, err := s.botLogin(ctx)
	if err != nil {
		return none, err
	}
	if it, att, err = s.spendNonce(ctx, gh, it, att); err != nil {
		return none, err
	}
	return s.mint(ctx, gh, it, att, perms, bot, deps)
}

// mayStart checks that the work item's state lets the attempt's stage start now, and
// that a run under an approval has one that holds for its revision. It returns the
// permissions of the run's installation token.
func (s *Service) mayStart(rec *ledger.Record, att *ledger.Attempt) (map[string]string, error) {
	perms := s.opts.TokenPermissions
	switch {
	case att.Stage == StagePlan && rec.State == ledger.Planning:
		perms = planPermissions
	case wire.WritingStage(att.Stage) && rec.State == ledger.Running,
		att.Stage == StageReview && rec.State == ledger.Reviewing:
		if a := rec.ActiveApproval(); a == nil || att.Revision != rec.ApprovalRevision() {
			return nil, refuse(RefusalApproval, "attempt %d's approval no longer holds", att.Number)
		}
	default:
		return nil, refuse(RefusalState, "%s is %s; no %s run may start", rec.ID(), rec.State, att.Stage)
	}
	if att.Stage == StageReview {
		perms = reviewPermissions
	}
	return perms, nil
}

// approvedStillHolds re-reads on GitHub, now that credentials are about to be minted,
// what the run starts from and what its approval binds: the pull request of a fix or
// review run, the base commit of any other, and (but for a plan run) the issue, the
// plan, the policy and the approval comment. What moved voids the approval and refuses.
func (s *Service) approvedStillHolds(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt) error {
	rec := it.rec
	if wire.PullStage(att.Stage) {
		// These runs start from the pull request Bumper pushed; the base branch moving on
		// meanwhile is normal and voids nothing.
		if err := s.pullHolds(ctx, gh, rec, att.Stage); err != nil {
			return err
		}
	} else {
		// Approved is not authorized until now: the base must still be what was approved.
		head, err := gh.BranchHead(ctx, it.repo.FullName, rec.BaseBranch)
		if err != nil {
			return fmt.Errorf("failed to read the head of %s: %w", rec.BaseBranch, err)
		}
		if head != rec.BaseCommit {
			return s.baseMoved(ctx, gh, it, head)
		}
	}
	if att.Stage == StagePlan {
		return nil
	}
	why, err := s.approvedTextHolds(ctx, gh, it)
	if err != nil {
		return err
	}
	if why != "" {
		return s.voidAtMint(ctx, gh, it, why)
	}
	return nil
}

// spendNonce uses up the attempt's nonce: first on GitHub, by creating the attempt's
// exchange ref, which only one replica can do, then in the record.
// Once the ref is made the nonce is this exchange's, so a record another replica wrote
// meanwhile (ErrConflict) is read again and the nonce marked used on it, as long as the
// attempt is still the current one. It returns the item and attempt as written.
func (s *Service) spendNonce(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt) (*item, *ledger.Attempt, error) {
	rec := it.rec
	key := DispatchKey(rec.Issue, att.Revision, att.Number)
	created, err := gh.CreateRef(ctx, it.repo.FullName, ExchangeRefPrefix+key, rec.BaseCommit)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to claim the nonce of %s: %w", key, err)
	}
	if !created {
		return nil, nil, refuse(RefusalNonce, "the nonce of attempt %d was already used", att.Number)
	}
	for try := 1; ; try++ {
		att.NonceUsed = true
		err := s.save(ctx, gh, it, "")
		if !errors.Is(err, ErrConflict) || try == conflictTries {
			return it, att, err
		}
		if it, err = s.load(ctx, gh, it.repo, rec.Issue); err != nil {
			return nil, nil, err
		}
		if it == nil {
			return nil, nil, refuse(RefusalUnknownItem, "%s has no work item", rec.ID())
		}
		now := it.rec.CurrentAttempt()
		if now == nil || now.Number != att.Number || now.Revision != att.Revision {
			return nil, nil, refuse(RefusalAttempt, "attempt %d is no longer the current attempt of %s", att.Number, rec.ID())
		}
		att = now
	}
}

// conflictTries bounds how often a write that must happen is read again and redone
// after another replica's write (ErrConflict).
const conflictTries = 3

// mint makes the run's credentials, the dependency token (contents: read on deps, when
// any; first, so that its refusal leaves no other token minted), the installation token
// (perms, this repository only) and the run token for its call-backs, and the answer
// that carries them.
func (s *Service) mint(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt, perms map[string]string, bot string, deps []string) (wire.ExchangeResponse, error) {
	var none wire.ExchangeResponse
	rec := it.rec
	depTok, depExp, err := s.mintDependencies(ctx, gh, it, deps)
	if err != nil {
		return none, err
	}
	tok, tokExp, err := gh.RepoToken(ctx, it.repo.FullName, perms)
	if err != nil {
		return none, fmt.Errorf("failed to mint the installation token of %s: %w", rec.ID(), err)
	}
	runTok, runExp, err := s.opts.RunTokens.Sign(wire.RunClaims{WorkItem: rec.WorkItem(), Revision: att.Revision,
		Attempt: att.Number, Stage: att.Stage, Scope: wire.ScopesOf(att.Stage)})
	if err != nil {
		return none, err
	}
	var approvals []wire.Approval
	if a := rec.ActiveApproval(); a != nil && att.Stage != StagePlan {
		approvals = append(approvals, a.Approval)
	}
	resp := wire.ExchangeResponse{InstallationToken: tok, TokenExpiresAt: tokExp, Permissions: perms,
		Repository: rec.Repository, RunToken: runTok, RunTokenExpiresAt: runExp, WorkItem: rec.WorkItem(),
		Revision: att.Revision, Attempt: att.Number, Stage: att.Stage, BaseCommit: rec.BaseCommit,
		BaseBranch: rec.BaseBranch, BotLogin: bot, Approvals: approvals, Branch: WorkBranchName(rec.Issue, att.Number),
		Dependencies: deps, DependencyToken: depTok, DependencyTokenExpiresAt: depExp, BudgetMicroUSD: att.ReservedMicroUSD}
	if wire.PullStage(att.Stage) {
		resp.Branch, resp.PullRequest, resp.HeadCommit = rec.WorkBranch, rec.PullRequest, rec.PullHead
	}
	if att.Stage == StageUpdate {
		resp.UpdateTo = att.UpdateTo
	}
	return resp, nil
}

// WorkBranchName is the branch an implement run pushes to: bumper/<issue>-<attempt>.
func WorkBranchName(issue, attempt int) string { return ledger.WorkBranchName(issue, attempt) }

// pullHolds checks, before a run on the pull request gets credentials, that the pull
// request is still open with the head Bumper pushed (or took back), and that no human
// pushed to its branch since (a round would push over their work).
func (s *Service) pullHolds(ctx context.Context, gh GitHub, rec *ledger.Record, stage wire.Stage) error {
	if rec.PullRequest == 0 || rec.WorkBranch == "" || rec.PullHead == "" {
		return refuse(RefusalState, "%s has no pull request for a %s run", rec.ID(), stage)
	}
	if wire.RoundStage(stage) && rec.HumanPush != nil {
		return refuse(RefusalState, "@%s pushed to %s: Bumper does not push there again", rec.HumanPush.By, rec.WorkBranch)
	}
	pr, err := gh.PullRequest(ctx, rec.Repository, rec.PullRequest)
	if err != nil {
		return fmt.Errorf("failed to read pull request #%d: %w", rec.PullRequest, err)
	}
	switch {
	case pr.State != "open":
		return refuse(RefusalState, "pull request #%d is %s", rec.PullRequest, pr.State)
	case pr.HeadSHA != rec.PullHead:
		return refuse(RefusalState, "pull request #%d's head is %.12s, not %.12s, which Bumper pushed and the run was dispatched for", rec.PullRequest, pr.HeadSHA, rec.PullHead)
	}
	return nil
}

// baseMoved voids the approval of a run whose base branch moved before it started.
func (s *Service) baseMoved(ctx context.Context, gh GitHub, it *item, head string) error {
	rec := it.rec
	reason := fmt.Sprintf("the base branch %s moved from %.12s to %.12s after approval", rec.BaseBranch, rec.BaseCommit, head)
	rec.VoidApprovals(reason)
	if a := rec.CurrentAttempt(); a != nil {
		a.Outcome, a.EndedAt = "voided", s.now().UTC()
	}
	rec.BaseCommit = head
	if rec.State == ledger.Running {
		if err := s.move(ctx, it, ledger.AwaitingApproval, reason); err != nil {
			return err
		}
	}
	if err := s.save(ctx, gh, it, ""); err != nil {
		return err
	}
	if err := s.reply(ctx, gh, it.repo.FullName, rec.Issue, "The approval no longer holds: "+reason+
		". A maintainer can comment `/approve` to authorize a run on the new base."); err != nil {
		return err
	}
	return refuse(RefusalApproval, "%s", reason)
}

// runItem loads the work item a runner names through the installation that holds its
// repository. The runner's word is all there is, so anything it names that is not
// there is a refusal.
func (s *Service) runItem(ctx context.Context, w wire.WorkItem) (GitHub, *item, error) {
	return s.runItemAs(ctx, w, true)
}

// runItemAs is runItem; verify as loadIssueAs.
func (s *Service) runItemAs(ctx context.Context, w wire.WorkItem, verify bool) (GitHub, *item, error) {
	gh, err := s.opts.Connector.ForRepository(ctx, w.Repository)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, refuse(RefusalUnknownItem, "the App is not installed on %s", w.Repository)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reach the installation of %s: %w", w.Repository, err)
	}
	it, err := s.loadIssueAs(ctx, gh, Repo{FullName: w.Repository}, Issue{Number: w.Issue, Comments: -1}, verify)
	if err != nil {
		return nil, nil, err
	}
	if it == nil {
		return nil, nil, refuse(RefusalUnknownItem, "%s has no work item", w)
	}
	it.repo.DefaultBranch = it.rec.BaseBranch
	return gh, it, nil
}

// stopReadBack is how long a should-stop poll trusts this replica's copy of a run's
// record without reading it back: a /stop another replica handled reaches the run
// within it, even when every poll comes to this replica (a kept-alive connection
// through a balancer that picks a replica per connection).
const stopReadBack = 10 * time.Second

// maxReadBacks bounds the should-stop polls' read-back times; past it, they start over.
const maxReadBacks = 10000

// currentActive is current for the should-stop poll, every few seconds of every run:
// the index's copy answers while it shows the run's attempt under way and was read back
// from GitHub within stopReadBack; anything else (another attempt, an ended item, an
// unknown one, a copy not read back lately) is read again from GitHub, since this
// replica's copy may predate another replica's writes (a /stop among them).
func (s *Service) currentActive(ctx context.Context, c wire.RunClaims) (GitHub, *item, error) {
	key := c.WorkItem.String()
	s.mu.Lock()
	at, ok := s.readBacks[key]
	s.mu.Unlock()
	if !ok || s.now().Sub(at) >= stopReadBack || s.now().Before(at) {
		gh, it, err := s.current(ctx, c)
		if err == nil {
			s.mu.Lock()
			if s.readBacks == nil || len(s.readBacks) >= maxReadBacks {
				s.readBacks = map[string]time.Time{}
			}
			s.readBacks[key] = s.now()
			s.mu.Unlock()
		}
		return gh, it, err
	}
	gh, it, err := s.runItemAs(ctx, c.WorkItem, false)
	var ref *Refusal
	if err != nil && !errors.As(err, &ref) {
		return nil, nil, err
	}
	if err == nil {
		att := it.rec.CurrentAttempt()
		if att != nil && att.Number == c.Attempt && att.Revision == c.Revision && att.NonceUsed && it.rec.State.Active() {
			return gh, it, nil
		}
	}
	return s.current(ctx, c)
}

// current loads the work item a run token names and checks the token is for its
// current attempt.
func (s *Service) current(ctx context.Context, c wire.RunClaims) (GitHub, *item, error) {
	gh, it, err := s.runItem(ctx, c.WorkItem)
	if err != nil {
		return nil, nil, err
	}
	att := it.rec.CurrentAttempt()
	if att == nil || att.Number != c.Attempt || att.Revision != c.Revision {
		return nil, nil, refuse(RefusalAttempt, "attempt %d is not the current run of %s", c.Attempt, c.WorkItem)
	}
	if !att.NonceUsed {
		// The exchange ref is the nonce's spending, made before any run token: a record
		// without the mark lost it to another replica's write (last-writer-wins between a
		// write's last read and the write), and the next write puts it back. Without the
		// ref, no exchange happened and these claims are no run's.
		spent, err := gh.RefExists(ctx, it.repo.FullName, ExchangeRefPrefix+DispatchKey(it.rec.Issue, att.Revision, att.Number))
		if err != nil {
			return nil, nil, fmt.Errorf("failed to read the exchange ref of %s: %w", c.WorkItem, err)
		}
		if !spent {
			return nil, nil, refuse(RefusalAttempt, "attempt %d is not the current run of %s", c.Attempt, c.WorkItem)
		}
		att.NonceUsed = true
	}
	return gh, it, nil
}
