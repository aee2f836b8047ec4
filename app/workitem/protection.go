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
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// protectionNotice checks, when a work item starts, what the base branch's protection
// leaves open: Bumper never merges, but only branch protection makes "humans merge"
// true of everyone else too. It returns what the status comment should tell the
// repository's owner, or "" when the branch requires a review the App cannot bypass.
// The run happens either way.
func (s *Service) protectionNotice(ctx context.Context, gh GitHub, rec *ledger.Record, pol repoconfig.Config) string {
	branch := rec.BaseBranch
	p, err := gh.BranchProtection(ctx, rec.Repository, branch)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Sprintf("`%s` is not protected, so nothing stops a merge of Bumper's pull request without a person's review. Protect it (Settings → Branches): require a pull request with at least one approving review%s.",
			branch, verdictAdvice(pol))
	case errors.Is(err, ErrForbidden):
		return fmt.Sprintf("Bumper cannot read the protection of `%s` (the App has no Administration: read permission), so it cannot tell whether a person's review is required before a merge.", branch)
	case err != nil:
		zerolog.Ctx(ctx).Warn().Err(err).Str(logkey.WorkItem, rec.ID()).Msg("failed to read the base branch's protection")
		return fmt.Sprintf("Bumper could not read the protection of `%s` (%s), so it cannot tell whether a person's review is required before a merge.", branch, oneLine(err.Error()))
	}
	var gaps []string
	if p.RequiredReviews < 1 {
		gaps = append(gaps, "does not require an approving review before a merge")
	}
	bot, err := s.botLogin(ctx)
	if err == nil {
		slug := strings.TrimSuffix(bot, "[bot]")
		if slices.ContainsFunc(p.BypassApps, func(a string) bool { return strings.EqualFold(a, slug) }) {
			gaps = append(gaps, fmt.Sprintf("lets the %s App bypass its pull request rules", slug))
		}
	}
	if pol.ReviewerOn() {
		i := slices.IndexFunc(p.RequiredChecks, func(c RequiredCheck) bool { return c.Name == CheckVerdict })
		switch {
		case i < 0:
			gaps = append(gaps, "does not require the `"+CheckVerdict+"` check")
		case s.opts.AppID != 0 && p.RequiredChecks[i].AppID != s.opts.AppID:
			// A required context from any source is met by a commit status anyone with
			// write access can post, or another App's check of that name.
			gaps = append(gaps, "requires `"+CheckVerdict+"` from any source, so a commit status or another App's check of that name meets it (pin it to the App: expected source)")
		}
	}
	if len(gaps) == 0 {
		return ""
	}
	return fmt.Sprintf("`%s`'s protection %s. Bumper never merges, and this run goes ahead, but the branch does not hold it to a person's review and Bumper's verdict: require at least one approving review, with no bypass for the App%s.",
		branch, strings.Join(gaps, ", and "), verdictAdvice(pol))
}

// verdictAdvice suggests requiring the reviewer's check where there is one.
func verdictAdvice(pol repoconfig.Config) string {
	if !pol.ReviewerOn() {
		return ""
	}
	return ", and the `" + CheckVerdict + "` check with the App as its expected source"
}
