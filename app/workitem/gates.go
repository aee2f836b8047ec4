package workitem

import (
	"context"
	"fmt"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/verdictpost"
	"github.com/bumperdev/bumper/internal/textcut"
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
	var last *CheckRun
	for i, r := range runs { // newest first for each name
		// Any App can name a check run bumper/gates: only the App's own count.
		if r.Name == CheckGates && (s.opts.AppID == 0 || r.AppID == s.opts.AppID) {
			last = &runs[i]
			break
		}
	}
	if last == nil || last.Status != "completed" || last.Conclusion != "failure" {
		return nil
	}
	head := fmt.Sprintf("Approved by `%s` in review %d of this commit: a person has read the findings below.\n\n", rv.User, rv.ID)
	_, err = gh.CreateCheckRun(ctx, it.rec.Repository, CheckRun{Name: CheckGates, HeadSHA: rv.CommitID, Status: "completed", Conclusion: "success",
		Title: "Findings approved by a writer's review", Summary: head + textcut.Fit(last.Summary, verdictpost.MaxCheckSummary-len(head), textcut.Ellipsis), DetailsURL: last.DetailsURL})
	if err != nil {
		return fmt.Errorf("failed to clear %s on %.12s: %w", CheckGates, rv.CommitID, err)
	}
	log.Info().Str(logkey.Conclusion, "success").Msg("a writer's approval cleared the gates' findings")
	return nil
}
