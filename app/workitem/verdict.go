package workitem

import (
	"context"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/verdict"
)

// Verdict takes what a review run concluded and hands the pull request to humans.
func (s *Service) Verdict(ctx context.Context, c wire.RunClaims, v wire.Verdict) error {
	if c.Stage != StageReview {
		// Only a reviewer run, with its fresh context, judges a pull request: the run that
		// wrote the change may not grade it.
		return refuse("a %s run cannot post a verdict; only a review run can", c.Stage)
	}
	if len(v.Document) > wire.MaxVerdictDocument {
		return refuse("the verdict document is %d bytes; at most %d are taken", len(v.Document), wire.MaxVerdictDocument)
	}
	if strings.TrimSpace(v.Document) == "" && strings.TrimSpace(v.Problem) == "" {
		return refuse("a verdict call needs the document or the problem that left the run without one")
	}
	defer s.lock(c.WorkItem)()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	if it.rec.State != ledger.Reviewing {
		return refuse("%s is %s, not reviewing", c.WorkItem, it.rec.State)
	}
	var reason string
	if v.Problem != "" {
		reason = "the review run produced no verdict: " + cutReason(v.Problem)
	} else if parsed, err := verdict.Parse([]byte(v.Document)); err != nil {
		reason = "the reviewer's verdict is invalid: " + cutReason(err.Error())
	} else {
		reason = fmt.Sprintf("reviewer verdict: %s (confidence %.2f)", parsed.Verdict, parsed.Confidence)
	}
	if err := s.move(ctx, it, ledger.InReview, reason); err != nil {
		return err
	}
	return s.save(ctx, gh, it, "")
}
