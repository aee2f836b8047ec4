package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem/plantext"
)

// planComment renders the comment that shows a plan for approval (plantext.Comment).
func (s *Service) planComment(rec *ledger.Record, plan string) string {
	return plantext.Comment(s.opts.Sealer.ShortID(rec.TextRevision()), plan)
}

// readPlan re-reads the approved plan from its comment. why says what is wrong with the
// comment when it cannot be the approved plan; err is for GitHub failures.
func (s *Service) readPlan(ctx context.Context, gh GitHub, rec *ledger.Record) (plan, why string, err error) {
	if rec.PlanComment == 0 {
		return "", "the record names no plan comment", nil
	}
	c, err := gh.Comment(ctx, rec.Repository, rec.PlanComment)
	if errors.Is(err, ErrNotFound) {
		return "", "the plan comment was deleted", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("failed to re-read the plan of %s: %w", rec.ID(), err)
	}
	bot, err := s.botLogin(ctx)
	if err != nil {
		return "", "", err
	}
	if !strings.EqualFold(c.Author, bot) {
		return "", fmt.Sprintf("the plan comment was written by @%s, not by Bumper", c.Author), nil
	}
	plan, ok := plantext.Parse(c.Body)
	if !ok {
		return "", "the plan comment was edited and no longer holds a plan", nil
	}
	return plan, "", nil
}
