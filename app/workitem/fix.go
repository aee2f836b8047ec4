package workitem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// failing are the check conclusions a fix round answers; neutral and skipped pass a
// required check on GitHub, and cancelled is someone's decision, not a failure of the
// code.
var failing = []string{"failure", "timed_out", "action_required", "startup_failure"}

// failedRequired lists the base branch's required checks whose latest run on the pull
// request's head failed. Bumper's own checks are not CI: a failing verdict is the
// reviewer's opinion, which a fix round does not argue with, and failing gates ask for
// a person, not for the agent to make its findings go away. A check pinned to an App
// counts only from that App's check runs: another's of the same name (any App can name a
// check anything) starts nothing.
func (s *Service) failedRequired(ctx context.Context, gh GitHub, rec *ledger.Record) ([]CheckRun, error) {
	required, err := gh.RequiredChecks(ctx, rec.Repository, rec.BaseBranch)
	if err != nil {
		return nil, fmt.Errorf("failed to read the required checks of %s: %w", rec.BaseBranch, err)
	}
	required = slices.DeleteFunc(required, func(c RequiredCheck) bool {
		return c.Name == CheckEvidence || c.Name == CheckVerdict || c.Name == CheckGates
	})
	if len(required) == 0 {
		return nil, nil
	}
	runs, err := gh.CheckRuns(ctx, rec.Repository, rec.PullHead)
	if err != nil {
		return nil, fmt.Errorf("failed to list the check runs of %.12s: %w", rec.PullHead, err)
	}
	var out []CheckRun
	seen := map[string]bool{}
	for _, r := range runs { // newest first for each name
		i := slices.IndexFunc(required, func(c RequiredCheck) bool { return c.Name == r.Name })
		if seen[r.Name] || i < 0 || required[i].AppID != 0 && required[i].AppID != r.AppID {
			continue
		}
		seen[r.Name] = true
		if r.Status == "completed" && slices.Contains(failing, r.Conclusion) {
			out = append(out, r)
		}
	}
	return out, nil
}

// humanApproval names who approved the pull request, "" when nobody did: Bumper never
// pushes under a person's approval, which GitHub would keep for commits they never read
// unless the branch dismisses stale approvals.
func (s *Service) humanApproval(ctx context.Context, gh GitHub, rec *ledger.Record) (string, error) {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return "", err
	}
	reviews, err := gh.Reviews(ctx, rec.Repository, rec.PullRequest)
	if err != nil {
		return "", fmt.Errorf("failed to list the reviews of pull request #%d: %w", rec.PullRequest, err)
	}
	latest := map[string]string{}
	var order []string
	for _, r := range reviews {
		if strings.EqualFold(r.User, bot) || r.State == "COMMENTED" || r.State == "PENDING" {
			continue
		}
		if _, ok := latest[r.User]; !ok {
			order = append(order, r.User)
		}
		latest[r.User] = r.State
	}
	for _, u := range order {
		if latest[u] == "APPROVED" {
			return u, nil
		}
	}
	return "", nil
}

// maybeFix starts a fix round when a required check failed on the pull request's head
// of an item in review, within bounds.fix_rounds; once they are used up the item fails.
// Nothing happens after a human pushed to the branch: the pull request is theirs.
func (s *Service) maybeFix(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config) error {
	rec := it.rec
	if rec.State != ledger.InReview || rec.HumanPush != nil || rec.PullRequest == 0 || rec.PullHead == "" || pol.Bounds.FixRounds == 0 {
		return nil
	}
	failed, err := s.failedRequired(ctx, gh, rec)
	if err != nil || len(failed) == 0 {
		return err
	}
	names := make([]string, 0, len(failed))
	for _, f := range failed {
		names = append(names, f.Name)
	}
	list := strings.Join(names, ", ")
	if rec.ActiveApproval() == nil {
		// The issue changed after its approval: no run starts until it is approved again.
		rec.Reason = fmt.Sprintf("the required check(s) %s failed on %.12s, but the approval no longer holds, so no fix round starts", list, rec.PullHead)
		return nil
	}
	if who, err := s.humanApproval(ctx, gh, rec); err != nil {
		return err
	} else if who != "" {
		rec.Reason = fmt.Sprintf("the required check(s) %s failed on %.12s, but @%s approved the pull request: Bumper does not push under a person's approval", list, rec.PullHead, who)
		return nil
	}
	used := rec.AttemptsOfStage(StageFix)
	if used >= pol.Bounds.FixRounds {
		return s.move(ctx, it, ledger.Failed, fmt.Sprintf("fix rounds exhausted: the required check(s) %s still fail on %.12s after %d fix round(s) (bounds.fix_rounds); the pull request is left to humans",
			list, rec.PullHead, used))
	}
	if err := s.move(ctx, it, ledger.Running, fmt.Sprintf("the required check(s) %s failed on %.12s: fix round %d of %d", list, rec.PullHead, used+1, pol.Bounds.FixRounds)); err != nil {
		return err
	}
	if err := s.dispatch(ctx, gh, it, StageFix); err != nil {
		return err
	}
	if a := rec.CurrentAttempt(); a != nil && a.Stage == StageFix && a.Outcome == "" {
		a.FixChecks = names
	}
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.Reason, list).Msg("dispatched a fix round")
	return nil
}

// CheckEvent is a check_run "completed" webhook, translated.
type CheckEvent struct {
	Delivery     string
	Repo         Repo
	Name         string
	HeadSHA      string
	Conclusion   string
	PullRequests []int
}

// HandleCheck looks at a completed check on a work item's pull request: a required one
// that failed on the head Bumper pushed starts a fix round.
func (s *Service) HandleCheck(ctx context.Context, gh GitHub, ev CheckEvent) error {
	if ev.Name == CheckEvidence || ev.Name == CheckVerdict || !slices.Contains(failing, ev.Conclusion) {
		return nil
	}
	// Every pull request listed is looked at: one that is not its item's (another on the
	// same commit) must not hide the one that is.
	var errs []error
	for _, pr := range ev.PullRequests {
		n, ok, err := s.itemOfPull(ctx, gh, ev.Repo.FullName, pr, "")
		if err == nil && ok {
			err = s.checkFailed(ctx, gh, ev, n, pr)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Service) checkFailed(ctx context.Context, gh GitHub, ev CheckEvent, issue, pr int) error {
	defer s.lock(ledger.ID(ev.Repo.FullName, issue))()
	it, err := s.load(ctx, gh, ev.Repo, issue)
	if errors.Is(err, errUntrusted) {
		return nil // the issue's own events mark it
	}
	if err != nil || it == nil {
		return err
	}
	rec := it.rec
	if it.stored.Handled(ev.Delivery) || rec.PullRequest != pr || rec.State != ledger.InReview || rec.PullHead != ev.HeadSHA || rec.Updating != nil {
		// A check on an older head, or one that fails while a run is under way (the next
		// review hands the item back and looks at the checks then), changes nothing now.
		return nil
	}
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		return nil
	}
	if err != nil {
		return err
	}
	before, reason := rec.State, rec.Reason
	if err := s.maybeFix(ctx, gh, it, pol); err != nil {
		return err
	}
	if rec.State == before && rec.Reason == reason {
		return nil
	}
	return s.save(ctx, gh, it, ev.Delivery)
}

// fixTask is a fix run's failing checks, as the runner gives them to the agent, read
// again from GitHub: the run sees what CI says now, bounded.
func (s *Service) fixTask(ctx context.Context, gh GitHub, rec *ledger.Record, att *ledger.Attempt) ([]wire.FailedCheck, error) {
	runs, err := gh.CheckRuns(ctx, rec.Repository, rec.PullHead)
	if err != nil {
		return nil, fmt.Errorf("failed to list the check runs of %.12s: %w", rec.PullHead, err)
	}
	var out []wire.FailedCheck
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Name] || !slices.Contains(att.FixChecks, r.Name) {
			continue
		}
		seen[r.Name] = true
		out = append(out, wire.FailedCheck{Name: r.Name, Conclusion: r.Conclusion, Title: cutBytes(r.Title, 1024),
			Summary: cutBytes(r.Summary, wire.MaxCheckText), Text: cutBytes(r.Text, wire.MaxCheckText), URL: r.DetailsURL})
	}
	return out, nil
}
