package workitem

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// RunTokenSigner signs run tokens.
type RunTokenSigner interface {
	Sign(c wire.RunClaims) (string, time.Time, error)
}

// planPermissions are a plan run's: it reads the code and reports through call-backs.
var planPermissions = map[string]string{"contents": "read"}

// ParseWorkItem splits "owner/repo#issue"; it is wire.ParseWorkItem, the one parser the
// App and the runner share.
func ParseWorkItem(s string) (repo string, issue int, err error) { return wire.ParseWorkItem(s) }

// Exchange checks a runner's verified identity and nonce against the work item and
// hands out the run's credentials. Every refusal is a *Refusal.
func (s *Service) Exchange(ctx context.Context, id Identity, req wire.ExchangeRequest) (wire.ExchangeResponse, error) {
	var none wire.ExchangeResponse
	repo, n, err := ParseWorkItem(req.WorkItem)
	if err != nil {
		return none, refuse("%v", err)
	}
	if !strings.EqualFold(id.Repository, repo) {
		return none, refuse("the OIDC token is for repository %s, not %s", id.Repository, repo)
	}
	// Fail closed: GitHub always names the triggering event, so a token without one is
	// not an Actions run Bumper dispatched.
	if id.EventName != "workflow_dispatch" {
		return none, refuse("the run was triggered by %q, not by Bumper's workflow_dispatch", id.EventName)
	}
	defer s.lock(ledger.ID(repo, n))()
	gh, it, err := s.runItem(ctx, req.WorkItem)
	if err != nil {
		return none, err
	}
	rec := it.rec
	wantWF := fmt.Sprintf("%s/.github/workflows/%s@refs/heads/%s", rec.Repository, s.opts.Workflow, rec.BaseBranch)
	if !strings.EqualFold(id.WorkflowRef, wantWF) {
		return none, refuse("the run's workflow is %s, not Bumper's runner workflow %s", id.WorkflowRef, wantWF)
	}
	if id.Ref != "refs/heads/"+rec.BaseBranch {
		return none, refuse("the run's ref is %s, not refs/heads/%s", id.Ref, rec.BaseBranch)
	}
	att := rec.CurrentAttempt()
	if att == nil || att.Number != req.Attempt {
		return none, refuse("attempt %d is not the current attempt of %s", req.Attempt, rec.ID())
	}
	if subtle.ConstantTimeCompare([]byte(hashNonce(req.Nonce)), []byte(att.NonceHash)) != 1 {
		return none, refuse("the nonce does not match attempt %d's", att.Number)
	}
	if att.NonceUsed {
		return none, refuse("the nonce of attempt %d was already used", att.Number)
	}
	if strconv.FormatInt(att.RunID, 10) != id.RunID {
		return none, refuse("run %s is not the run dispatched for attempt %d", id.RunID, att.Number)
	}
	perms := s.opts.TokenPermissions
	switch {
	case att.Stage == StagePlan && rec.State == ledger.Planning:
		perms = planPermissions
	case (att.Stage == StageImplement || att.Stage == StageFix) && rec.State == ledger.Running,
		att.Stage == StageReview && rec.State == ledger.Reviewing:
		if a := rec.ActiveApproval(); a == nil || att.Revision != rec.ApprovalRevision() {
			return none, refuse("attempt %d's approval no longer holds", att.Number)
		}
	default:
		return none, refuse("%s is %s; no %s run may start", rec.ID(), rec.State, att.Stage)
	}
	if att.Stage == StageReview {
		perms = reviewPermissions
	}
	if att.Stage == StageFix || att.Stage == StageReview {
		// These runs start from the pull request Bumper pushed; the base branch moving on
		// meanwhile is normal and voids nothing.
		if err := s.pullHolds(ctx, gh, rec, att.Stage); err != nil {
			return none, err
		}
	} else {
		// Approved is not authorized until now: the base must still be what was approved.
		head, err := gh.BranchHead(ctx, repo, rec.BaseBranch)
		if err != nil {
			return none, fmt.Errorf("failed to read the head of %s: %w", rec.BaseBranch, err)
		}
		if head != rec.BaseCommit {
			return none, s.baseMoved(ctx, gh, it, head)
		}
	}
	if att.Stage != StagePlan {
		why, err := s.approvedTextHolds(ctx, gh, it)
		if err != nil {
			return none, err
		}
		if why != "" {
			return none, s.voidAtMint(ctx, gh, it, why)
		}
	}
	// Learned before the nonce is spent, so a failure here leaves the attempt usable.
	bot, err := s.botLogin(ctx)
	if err != nil {
		return none, err
	}
	key := DispatchKey(rec.Issue, att.Revision, att.Number)
	created, err := gh.CreateRef(ctx, repo, ExchangeRefPrefix+key, rec.BaseCommit)
	if err != nil {
		return none, fmt.Errorf("failed to claim the nonce of %s: %w", key, err)
	}
	if !created {
		return none, refuse("the nonce of attempt %d was already used", att.Number)
	}
	att.NonceUsed = true
	if err := s.save(ctx, gh, it, ""); err != nil {
		return none, err
	}
	tok, tokExp, err := gh.RepoToken(ctx, repo, perms)
	if err != nil {
		return none, fmt.Errorf("failed to mint the installation token of %s: %w", rec.ID(), err)
	}
	runTok, runExp, err := s.opts.RunTokens.Sign(wire.RunClaims{WorkItem: rec.ID(), Revision: att.Revision,
		Attempt: att.Number, Stage: att.Stage, Scope: ScopesOf(att.Stage)})
	if err != nil {
		return none, err
	}
	var approvals []wire.Approval
	if a := rec.ActiveApproval(); a != nil && att.Stage != StagePlan {
		approvals = append(approvals, wire.Approval{By: a.By, At: a.At, Revision: a.Revision, CommentID: a.CommentID})
	}
	resp := wire.ExchangeResponse{InstallationToken: tok, TokenExpiresAt: tokExp, Permissions: perms,
		Repository: rec.Repository, RunToken: runTok, RunTokenExpiresAt: runExp, WorkItem: rec.ID(),
		Revision: att.Revision, Attempt: att.Number, Stage: att.Stage, BaseCommit: rec.BaseCommit,
		BaseBranch: rec.BaseBranch, BotLogin: bot, Approvals: approvals, Branch: WorkBranchName(rec.Issue, att.Number)}
	if att.Stage == StageFix || att.Stage == StageReview {
		resp.Branch, resp.PullRequest, resp.HeadCommit = rec.WorkBranch, rec.PullRequest, rec.PullHead
	}
	return resp, nil
}

// WorkBranchName is the branch an implement run pushes to: bumper/<issue>-<attempt>.
func WorkBranchName(issue, attempt int) string { return fmt.Sprintf("bumper/%d-%d", issue, attempt) }

// pullHolds checks, before a fix or review run gets credentials, that the pull request
// is still open with the head Bumper pushed, and that no human pushed to its branch (a
// fix run would push over their work).
func (s *Service) pullHolds(ctx context.Context, gh GitHub, rec *ledger.Record, stage string) error {
	if rec.PullRequest == 0 || rec.WorkBranch == "" || rec.PullHead == "" {
		return refuse("%s has no pull request for a %s run", rec.ID(), stage)
	}
	if stage == StageFix && rec.HumanPush != nil {
		return refuse("@%s pushed to %s: Bumper does not push there again", rec.HumanPush.By, rec.WorkBranch)
	}
	pr, err := gh.PullRequest(ctx, rec.Repository, rec.PullRequest)
	if err != nil {
		return fmt.Errorf("failed to read pull request #%d: %w", rec.PullRequest, err)
	}
	switch {
	case pr.State != "open":
		return refuse("pull request #%d is %s", rec.PullRequest, pr.State)
	case pr.HeadSHA != rec.PullHead:
		return refuse("pull request #%d's head is %.12s, not %.12s, which Bumper pushed and the run was dispatched for", rec.PullRequest, pr.HeadSHA, rec.PullHead)
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
	return refuse("%s", reason)
}

// runItem loads the work item a runner names ("owner/repo#issue") through the
// installation that holds its repository. The runner's word is all there is, so
// anything it names that is not there is a refusal.
func (s *Service) runItem(ctx context.Context, workItem string) (GitHub, *item, error) {
	repo, n, err := ParseWorkItem(workItem)
	if err != nil {
		return nil, nil, refuse("%v", err)
	}
	gh, err := s.opts.Connector.ForRepository(ctx, repo)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, refuse("the App is not installed on %s", repo)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reach the installation of %s: %w", repo, err)
	}
	it, err := s.load(ctx, gh, Repo{FullName: repo}, n)
	if err != nil {
		return nil, nil, err
	}
	if it == nil {
		return nil, nil, refuse("%s has no work item", workItem)
	}
	it.repo.DefaultBranch = it.rec.BaseBranch
	return gh, it, nil
}

// current loads the work item a run token names and checks the token is for its
// current attempt.
func (s *Service) current(ctx context.Context, c wire.RunClaims) (GitHub, *item, error) {
	gh, it, err := s.runItem(ctx, c.WorkItem)
	if err != nil {
		return nil, nil, err
	}
	att := it.rec.CurrentAttempt()
	if att == nil || att.Number != c.Attempt || att.Revision != c.Revision || !att.NonceUsed {
		return nil, nil, refuse("attempt %d is not the current run of %s", c.Attempt, c.WorkItem)
	}
	return gh, it, nil
}

// Progress moves the work item as its run reports steps.
func (s *Service) Progress(ctx context.Context, c wire.RunClaims, p wire.Progress) error {
	defer s.lock(c.WorkItem)()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	to, err := ledger.ParseState(p.State)
	if err != nil {
		return refuse("%v", err)
	}
	rec := it.rec
	var pol repoconfig.Config // read when a writing run hands its pull request over
	switch {
	case c.Stage == StagePlan && to == ledger.AwaitingApproval:
		if strings.TrimSpace(p.Plan) == "" {
			return refuse("a plan run must post its plan")
		}
		rec.PlanRevision = ledger.ContentRevision([]byte(p.Plan))
		if n := len(s.planComment(rec, p.Plan)); n > ledger.MaxCommentBytes {
			// Refused here, where the run hears why, rather than by GitHub, after which
			// the item would wait for a plan that never comes.
			return refuse("the plan, shown for approval, takes %d bytes; a GitHub comment holds %d: write a shorter plan", n, ledger.MaxCommentBytes)
		}
	case writes(c.Stage) && to == ledger.Verifying:
	case writes(c.Stage) && (to == ledger.Reviewing || to == ledger.InReview):
		// The pull request is open. A review run judges it next; the run that wrote the
		// change hands it to humans itself only where the repository turned its reviewer
		// off, and otherwise only a review run's verdict does.
		if pol, err = s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit); err != nil {
			return refuse("%v", err)
		}
		switch {
		case to == ledger.Reviewing && !pol.ReviewerOn():
			return refuse("the repository's reviewer is off (reviewer: false): a %s run reports in-review with its pull request", c.Stage)
		case to == ledger.InReview && pol.ReviewerOn():
			return refuse("the repository's reviewer is on: a %s run reports reviewing with its pull request, and only the review run's verdict moves it to in-review", c.Stage)
		}
		if err := s.takePull(ctx, gh, it, p.PullRequest, p.HeadCommit); err != nil {
			return err
		}
	default:
		return refuse("a %s run cannot report %s", c.Stage, p.State)
	}
	if err := ledger.Transition(rec.State, to); err != nil {
		return refuse("%v", err)
	}
	if err := s.move(ctx, it, to, p.Message); err != nil {
		return err
	}
	switch to {
	case ledger.Reviewing:
		if err := s.dispatch(ctx, gh, it, StageReview); err != nil {
			return err
		}
	case ledger.InReview:
		if err := s.maybeFix(ctx, gh, it, pol); err != nil {
			return err
		}
	}
	if to == ledger.AwaitingApproval {
		// The plan goes up first so the record can point at it: the token exchange
		// re-reads it from there.
		id, err := gh.CreateComment(ctx, rec.Repository, rec.Issue, s.planComment(rec, p.Plan))
		if err != nil {
			return fmt.Errorf("failed to post the plan of %s: %w", rec.ID(), err)
		}
		rec.PlanComment = id
	}
	return s.save(ctx, gh, it, "")
}

// writes reports whether a stage's run changes the code (and so opens the pull request).
func writes(stage string) bool { return stage == StageImplement || stage == StageFix }

// Evidence records an attempt's evidence bundle digest and figures.
func (s *Service) Evidence(ctx context.Context, c wire.RunClaims, e wire.Evidence) error {
	if !ledger.IsRevision(e.Digest) {
		return refuse("evidence digest %q: want sha256: and all 64 lower-case hex digits", e.Digest)
	}
	if e.AuditHead != "" && !ledger.IsRevision(e.AuditHead) {
		return refuse("audit head %q: want sha256: and all 64 lower-case hex digits of the audit chain's last line", e.AuditHead)
	}
	if c.Stage == StagePlan {
		return refuse("a plan run has no evidence to report; it posts its plan")
	}
	if e.Outcome != "" && !slices.Contains(wire.RunOutcomes, e.Outcome) {
		return refuse("outcome %q: want one of %s", e.Outcome, strings.Join(wire.RunOutcomes, ", "))
	}
	if len(e.Reason) > wire.MaxReason || !utf8.ValidString(e.Reason) {
		return refuse("reason: want valid UTF-8 of at most %d bytes", wire.MaxReason)
	}
	defer s.lock(c.WorkItem)()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	if e.PullRequest > 0 {
		if err := s.takePull(ctx, gh, it, e.PullRequest, e.HeadCommit); err != nil {
			return err
		}
	}
	att := it.rec.CurrentAttempt()
	att.EvidenceDigest, att.ImageDigest, att.CostMicroUSD = e.Digest, e.ImageDigest, e.CostMicroUSD
	// Every attempt keeps its reason in the status record, whose JSON must stay within
	// GitHub's comment limit whatever the reasons hold (a "<" takes six bytes there).
	att.RunOutcome, att.RunReason = e.Outcome, cutReason(e.Reason)
	if e.AuditHead != "" {
		it.rec.AuditHead = e.AuditHead
	}
	return s.save(ctx, gh, it, "")
}

// cutReason bounds a run's reason (or a review's problem) as the record keeps it: in
// bytes of its JSON encoding, so that the last ledger.KeptDetail attempts of it fit in a
// status comment with every other field at its largest (ledger TestLargestRecordFits).
func cutReason(s string) string { return ledger.Cut(s, ledger.MaxDetail) }

// cutBytes keeps at most n bytes of s (as valid UTF-8), on a character boundary, and
// marks a cut with "…".
func cutBytes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// MaxRunLife bounds how long a run's token is refreshed: GitHub ends a job after six
// hours whatever it does.
const MaxRunLife = 6 * time.Hour

// Refresh says whether a run may have a new token (nil) or not (a *Refusal): its attempt
// must be current, its work item in a state its stage runs in (an implement run's token
// is not refreshed once its pull request waits for review), and the attempt younger than
// MaxRunLife.
func (s *Service) Refresh(ctx context.Context, c wire.RunClaims) error {
	_, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	st := it.rec.State
	var ok bool
	switch c.Stage {
	case StagePlan:
		ok = st == ledger.Planning
	case StageImplement, StageFix:
		ok = st == ledger.Running || st == ledger.Verifying
	case StageReview:
		ok = st == ledger.Reviewing
	}
	if !ok {
		return refuse("the %s run is over (the work item is %s): no new token", c.Stage, st)
	}
	if att := it.rec.CurrentAttempt(); s.now().Sub(att.StartedAt) > MaxRunLife {
		return refuse("attempt %d started more than %v ago: no new token", att.Number, MaxRunLife)
	}
	return nil
}

// ShouldStop tells a run whether to stop: yes once its work item left the active states
// or moved on to another attempt.
func (s *Service) ShouldStop(ctx context.Context, c wire.RunClaims) (wire.ShouldStop, error) {
	_, it, err := s.current(ctx, c)
	var ref *Refusal
	if err != nil {
		if errors.As(err, &ref) {
			return wire.ShouldStop{Stop: true, Reason: err.Error()}, nil
		}
		return wire.ShouldStop{}, err
	}
	if !it.rec.State.Active() {
		return wire.ShouldStop{Stop: true, Reason: fmt.Sprintf("the work item is %s", it.rec.State)}, nil
	}
	if h := it.rec.HumanPush; h != nil && c.Stage == StageFix {
		return wire.ShouldStop{Stop: true, Reason: fmt.Sprintf("@%s pushed to %s: Bumper does not push there again", h.By, it.rec.WorkBranch)}, nil
	}
	return wire.ShouldStop{}, nil
}
