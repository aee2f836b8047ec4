package workitem

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/redrive"
)

// RedriveRefPrefix holds the refs that make a re-drive exactly-once (redrive.RefPrefix).
const RedriveRefPrefix = redrive.RefPrefix

// FaultPoint names a point of the dispatch where tests make serve die (Options.Fault).
type FaultPoint string

// FaultAfterDispatchRef is just after the dispatch guard ref was created, before the
// workflow is dispatched and the record written.
const FaultAfterDispatchRef FaultPoint = "after-dispatch-ref"

// FaultAfterDispatch is just after the workflow was dispatched, before the record of
// the dispatch was written.
const FaultAfterDispatch FaultPoint = "after-dispatch"

// PendingDispatch reports the dispatch key of an ErrDispatchedElsewhere whose record
// did not show the dispatch: it may be in flight on another replica, or its replica
// may have died after taking the guard ref. The caller schedules a re-drive.
func PendingDispatch(err error) (key string, ok bool) {
	var de *dispatchedElsewhere
	if errors.As(err, &de) && de.pending != "" {
		return de.pending, true
	}
	return "", false
}

// ItemOf names the work item of an ErrDispatchedElsewhere, "" for any other error.
func ItemOf(err error) string {
	var de *dispatchedElsewhere
	if errors.As(err, &de) {
		return de.item
	}
	return ""
}

// RedriveLater schedules retry, the re-handling of the event whose dispatch found key's
// guard ref taken without a record of the dispatch, once grace has passed: by then a
// live replica would have written its record. One entry per key.
func (s *Service) RedriveLater(ctx context.Context, key, item string, grace time.Duration, retry func(ctx context.Context) error) {
	if !s.redrives.Add(redrive.Pending{Key: key, Item: item, Due: s.now().Add(grace), Retry: retry}) {
		return
	}
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, item).Str(logkey.Dispatch, key).Dur(logkey.Grace, grace).
		Msg("a dispatch guard ref has no record of its dispatch; re-driving it after the grace period unless the record appears")
}

// Redrive re-handles the pending dispatches whose grace has passed, oldest first, and
// says how many it re-handled. Each re-handling reloads the item from GitHub; dispatch
// then takes the key over only if the record still lacks the dispatch and this replica
// creates the re-drive ref.
func (s *Service) Redrive(ctx context.Context) (int, error) {
	todo := s.redrives.TakeDue(s.now())
	var errs []error
	for _, p := range todo {
		s.idx.Delete(p.Item)
		if err := p.Retry(redrive.With(ctx, p.Key)); err != nil && !errors.Is(err, ErrDispatchedElsewhere) {
			zerolog.Ctx(ctx).Error().Err(err).Str(logkey.WorkItem, p.Item).Str(logkey.Dispatch, p.Key).Msg("failed to re-drive a dispatch")
			errs = append(errs, err)
		}
	}
	return len(todo), errors.Join(errs...)
}
