package workitem

import (
	"context"
	"fmt"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/gatescheck"
)

// clearGates takes a writer's approving review of a work item's pull request: when the
// App's latest bumper/gates check run on the reviewed commit failed (findings the
// runner left for a person), the App posts it again as passed, naming who approved,
// with the findings kept below. Only the reviewed commit is cleared: a later push has
// gates of its own. A review by a bot, by someone who may not give commands, or of a
// commit whose gates passed or that has none changes nothing; a redelivery finds the
// check passed already.
func (s *Service) clearGates(ctx context.Context, gh GitHub, ev ReviewEvent) error {
	rv := ev.Review
	n, log, ok, err := s.reviewOf(ctx, ev, "approval clears no gates")
	if !ok || err != nil {
		return err
	}
	defer s.lock(ledger.ID(ev.Repo.FullName, n))()
	it, err := s.load(ctx, gh, ev.Repo, n)
	if err != nil || it == nil || it.rec.PullRequest != ev.Number || rv.CommitID == "" {
		return err
	}
	if _, ok, err := s.reviewersPolicy(ctx, gh, it, rv, log, "approval clears no gates"); !ok || err != nil {
		return err
	}
	runs, err := gh.CheckRuns(ctx, it.rec.Repository, rv.CommitID)
	if err != nil {
		return fmt.Errorf("failed to list the check runs of %.12s: %w", rv.CommitID, err)
	}
	last := s.latestGates(runs)
	if last == nil || last.Status != "completed" || last.Conclusion != "failure" {
		return nil
	}
	if err := postCleared(ctx, gh, it.rec.Repository, rv, last); err != nil {
		return err
	}
	log.Info().Str(logkey.Conclusion, "success").Msg("a writer's approval cleared the gates' findings")
	return nil
}

// postCleared posts bumper/gates on rv's commit as passed, naming rv, with the
// findings of failed (the runner's run, or an earlier clearance) below.
func postCleared(ctx context.Context, gh GitHub, repo string, rv ReviewInfo, failed *CheckRun) error {
	title, summary := gatescheck.Cleared(rv.User, rv.ID, failed.Summary)
	if _, err := gh.CreateCheckRun(ctx, repo, CheckRun{Name: CheckGates, HeadSHA: rv.CommitID, Status: "completed", Conclusion: "success",
		Title: title, Summary: summary, DetailsURL: failed.DetailsURL}); err != nil {
		return fmt.Errorf("failed to clear %s on %.12s: %w", CheckGates, rv.CommitID, err)
	}
	return nil
}

// restoreGates takes the dismissal of a review: when the App's latest bumper/gates on
// the review's commit is the clearance that review gave, the findings stand again. If
// another approval of that commit by someone who may give commands still stands, the
// clearance names it instead; else the App posts bumper/gates as failed again, saying
// whose approval was dismissed, and a writer's approving review of the commit clears it
// once more. A dismissal of any other review changes nothing.
func (s *Service) restoreGates(ctx context.Context, gh GitHub, ev ReviewEvent) error {
	rv := ev.Review
	n, log, ok, err := s.reviewOf(ctx, ev, "dismissal restores no gates")
	if !ok || err != nil {
		return err
	}
	defer s.lock(ledger.ID(ev.Repo.FullName, n))()
	it, err := s.load(ctx, gh, ev.Repo, n)
	if err != nil || it == nil || it.rec.PullRequest != ev.Number || rv.CommitID == "" {
		return err
	}
	runs, err := gh.CheckRuns(ctx, it.rec.Repository, rv.CommitID)
	if err != nil {
		return fmt.Errorf("failed to list the check runs of %.12s: %w", rv.CommitID, err)
	}
	last := s.latestGates(runs)
	if last == nil || last.Conclusion != "success" || !gatescheck.ClearedBy(last.Summary, rv.User, rv.ID) {
		return nil
	}
	pol, err := s.policyAt(ctx, gh, it.rec.Repository, it.rec.BaseCommit)
	if err != nil && !isInvalidPolicy(err) {
		return err
	}
	// A policy that does not parse says who may give commands to no one: no other
	// approval then stands, and the findings come back.
	polValid := err == nil
	reviews, err := gh.Reviews(ctx, it.rec.Repository, ev.Number)
	if err != nil {
		return fmt.Errorf("failed to list the reviews of #%d: %w", ev.Number, err)
	}
	for _, o := range reviews {
		if o.ID == rv.ID || o.State != "APPROVED" || o.CommitID != rv.CommitID || !polValid {
			continue
		}
		if no, aerr := s.allowed(ctx, gh, it.rec.Repository, o.User, o.UserType, pol); aerr != nil {
			return aerr
		} else if no == nil && !authz.IsBot(o.User, o.UserType) {
			log.Info().Msg("a dismissed approval had cleared the gates; another writer's approval of the commit still stands")
			return postCleared(ctx, gh, it.rec.Repository, o, last)
		}
	}
	title, summary := gatescheck.Restored(rv.User, rv.ID, last.Summary)
	_, err = gh.CreateCheckRun(ctx, it.rec.Repository, CheckRun{Name: CheckGates, HeadSHA: rv.CommitID, Status: "completed", Conclusion: "failure",
		Title: title, Summary: summary, DetailsURL: last.DetailsURL})
	if err != nil {
		return fmt.Errorf("failed to post %s again on %.12s: %w", CheckGates, rv.CommitID, err)
	}
	log.Info().Str(logkey.Conclusion, "failure").Msg("the approval that cleared the gates' findings was dismissed")
	return nil
}

// latestGates is the App's latest bumper/gates of runs (newest first for each name):
// any App can name a check run bumper/gates, and only the App's own count.
func (s *Service) latestGates(runs []CheckRun) *CheckRun {
	for i, r := range runs {
		if r.Name == CheckGates && (s.opts.AppID == 0 || r.AppID == s.opts.AppID) {
			return &runs[i]
		}
	}
	return nil
}
