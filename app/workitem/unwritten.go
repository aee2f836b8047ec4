package workitem

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
)

// part names what of a work item a write to GitHub was for.
type part int

const (
	statusComment part = iota
	stateLabel
)

// unwritten handles a write of the work item that GitHub did not take (or a status
// comment that could not be made to fit): it logs it and says so on the issue, in a
// reply of Bumper's own words and fixed length, which nothing the issue holds can make
// too long. It returns err, so that the delivery counts as failed.
func (s *Service) unwritten(ctx context.Context, gh GitHub, it *item, what part, err error) error {
	rec := it.rec
	log := zerolog.Ctx(ctx)
	log.Error().Err(err).Str(logkey.WorkItem, rec.ID()).Str(logkey.State, string(rec.State)).
		Msg("failed to write the work item to GitHub; saying so on the issue")
	if rerr := s.reply(ctx, gh, it.repo.FullName, rec.Issue, unwrittenNote(what, it.stored == nil, rec.State, err, s.opts.TriggerLabel)); rerr != nil {
		log.Error().Err(rerr).Str(logkey.WorkItem, rec.ID()).Msg("failed to say on the issue that the work item was not written")
	}
	return err
}

// unwrittenNote is the reply: what could not be written, why as far as Bumper can tell,
// and what it means for the work item. It quotes nothing from the issue or GitHub's answer.
func unwrittenNote(what part, created bool, state ledger.State, err error, trigger string) string {
	why := ""
	switch {
	case errors.Is(err, ledger.ErrTooLong):
		why = " (it would be longer than a GitHub comment may be)"
	case errors.Is(err, ErrUnprocessable):
		why = " (GitHub refused its content: HTTP 422)"
	}
	const approved = " Whatever is not recorded, a run only ever gets credentials for the text a maintainer approved: Bumper re-reads the issue when it hands them out."
	switch {
	case what == stateLabel:
		return fmt.Sprintf("Bumper could not move this issue's `%s` label to `%s`%s. Its status comment is up to date; Bumper has logged the error.",
			ledger.LabelPrefix+"…", state.Label(), why)
	case created:
		return fmt.Sprintf("Bumper could not write the status comment that records this work item%s, so there is no work item: "+
			"no run gets credentials for it. Bumper has logged the error; remove and add the `%s` label again to try again.", why, trigger)
	default:
		return fmt.Sprintf("Bumper could not update this work item's status comment%s, so what just happened to the work item "+
			"(it would now be `%s`) is not recorded: the status comment and its label still show it as it was. Bumper has logged the error.%s",
			why, state, approved)
	}
}
