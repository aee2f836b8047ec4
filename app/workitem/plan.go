package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/reveal"
	"github.com/bumperdev/bumper/internal/mdcode"
)

// planMarker opens the bot's plan comment. The plan is shown as text in a fenced block,
// whose fence is longer than any backtick run in the plan, so it can be read back
// exactly and re-hashed when credentials are minted.
//
// Why as text: the plan is written by an agent that read the code. Rendered, its images
// would make GitHub's image proxy fetch any URL (a channel around the firewall), its
// links could mislead, and its HTML or diagram comments could hide instructions from
// the approver that the implementing agent then reads.
const (
	planMarker = "<!-- bumper:plan -->"
	planIntro  = "The plan as the plan run wrote it, shown as text (links, images and markup are not rendered):"
)

// planComment renders the comment that shows a plan for approval.
func (s *Service) planComment(rec *ledger.Record, plan string) string {
	id := s.opts.Sealer.ShortID(rec.TextRevision())
	fence := mdcode.Fence(plan)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### Plan (revision `%s`)\n\n%s\n\n%s\n%s\n%s\n\n", planMarker, id, planIntro, fence, plan, fence)
	if notice := reveal.Render(reveal.Scan(plan)); notice != "" {
		b.WriteString(notice)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "A maintainer who has read this plan can comment `/approve %s` to authorize a run of it.\n", id)
	return b.String()
}

// parsePlan reads the plan back out of a plan comment.
func parsePlan(body string) (string, bool) {
	rest, ok := strings.CutPrefix(body, planMarker+"\n### Plan (revision `")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "`)\n\n"+planIntro+"\n\n")
	if !ok {
		return "", false
	}
	fence, rest, ok := strings.Cut(rest, "\n")
	if !ok || len(fence) < 3 || strings.Trim(fence, "`") != "" {
		return "", false
	}
	plan, _, ok := strings.Cut(rest, "\n"+fence+"\n")
	return plan, ok
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
	plan, ok := parsePlan(c.Body)
	if !ok {
		return "", "the plan comment was edited and no longer holds a plan", nil
	}
	return plan, "", nil
}
