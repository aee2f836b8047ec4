package workitem

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/unwritten"
)

// unwritten handles a write of the work item that GitHub did not take (or a status
// comment that could not be made to fit): it logs it and says so on the issue, in a
// reply of Bumper's own words and fixed length (unwritten.Note), which nothing the issue
// holds can make too long. It returns err, so that the delivery counts as failed.
func (s *Service) unwritten(ctx context.Context, gh GitHub, it *item, what unwritten.Part, err error) error {
	rec := it.rec
	log := zerolog.Ctx(ctx)
	log.Error().Err(err).Str(logkey.WorkItem, rec.ID()).Str(logkey.State, string(rec.State)).
		Msg("failed to write the work item to GitHub; saying so on the issue")
	note := unwritten.Note(what, it.stored == nil, rec.State, err, errors.Is(err, ErrUnprocessable), s.opts.TriggerLabel)
	if rerr := s.reply(ctx, gh, it.repo.FullName, rec.Issue, note); rerr != nil {
		log.Error().Err(rerr).Str(logkey.WorkItem, rec.ID()).Msg("failed to say on the issue that the work item was not written")
	}
	return err
}
