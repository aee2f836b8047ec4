package workitem

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/protectionnotice"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// protectionNotice checks, when a work item starts, what the base branch's protection
// leaves open, and returns what the status comment should tell the repository's owner
// (protectionnotice), or "" when the branch requires a review the App cannot bypass.
// The run happens either way.
func (s *Service) protectionNotice(ctx context.Context, gh GitHub, rec *ledger.Record, pol repoconfig.Config) string {
	branch := rec.BaseBranch
	p, err := gh.BranchProtection(ctx, rec.Repository, branch)
	switch {
	case errors.Is(err, ErrNotFound):
		return protectionnotice.Unprotected(branch, pol.ReviewerOn())
	case errors.Is(err, ErrForbidden):
		return protectionnotice.Forbidden(branch)
	case err != nil:
		zerolog.Ctx(ctx).Warn().Err(err).Str(logkey.WorkItem, rec.ID()).Msg("failed to read the base branch's protection")
		return protectionnotice.Unread(branch, oneLine(err.Error()))
	}
	app := protectionnotice.App{ID: s.opts.AppID}
	if bot, err := s.botLogin(ctx); err == nil {
		app.Slug, app.Known = strings.TrimSuffix(bot, "[bot]"), true
	}
	return protectionnotice.Gaps(branch, p, app, pol.ReviewerOn())
}
