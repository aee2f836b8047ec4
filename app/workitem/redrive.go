package workitem

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
)

// RedriveRefPrefix holds the refs that make a re-drive exactly-once: a dispatch guard
// ref whose dispatch never happened (its replica died between the ref and the record)
// is re-driven by the one replica that creates refs/bumper/redrive/<key>.
const RedriveRefPrefix = "refs/bumper/redrive/"

// FaultPoint names a point of the dispatch where tests make serve die (Options.Fault).
type FaultPoint string

// FaultAfterDispatchRef is just after the dispatch guard ref was created, before the
// workflow is dispatched and the record written.
const FaultAfterDispatchRef FaultPoint = "after-dispatch-ref"

type redriveCtxKey struct{}

// withRedrive marks ctx as the re-drive of one dispatch key: dispatch may then take
// over that key's guard ref once it wins the re-drive ref.
func withRedrive(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, redriveCtxKey{}, key)
}

func redriveOf(ctx context.Context) string {
	k, _ := ctx.Value(redriveCtxKey{}).(string)
	return k
}

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

// pendingRedrive is one dispatch waiting out its grace period.
type pendingRedrive struct {
	item  string
	due   time.Time
	retry func(ctx context.Context) error
}

// RedriveLater schedules retry, the re-handling of the event whose dispatch found key's
// guard ref taken without a record of the dispatch, once grace has passed: by then a
// live replica would have written its record. One entry per key.
func (s *Service) RedriveLater(ctx context.Context, key, item string, grace time.Duration, retry func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redrives == nil {
		s.redrives = map[string]pendingRedrive{}
	}
	if _, ok := s.redrives[key]; ok {
		return
	}
	s.redrives[key] = pendingRedrive{item: item, due: s.now().Add(grace), retry: retry}
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, item).Str(logkey.Dispatch, key).Dur(logkey.Grace, grace).
		Msg("a dispatch guard ref has no record of its dispatch; re-driving it after the grace period unless the record appears")
}

// Redrive re-handles the pending dispatches whose grace has passed, oldest first, and
// says how many it re-handled. Each re-handling reloads the item from GitHub; dispatch
// then takes the key over only if the record still lacks the dispatch and this replica
// creates the re-drive ref.
func (s *Service) Redrive(ctx context.Context) (int, error) {
	now := s.now()
	s.mu.Lock()
	var due []string
	for k, p := range s.redrives {
		if !p.due.After(now) {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool { return s.redrives[due[i]].due.Before(s.redrives[due[j]].due) })
	todo := make([]pendingRedrive, 0, len(due))
	for _, k := range due {
		todo = append(todo, s.redrives[k])
		delete(s.redrives, k)
	}
	s.mu.Unlock()
	var errs []error
	for i, p := range todo {
		s.idx.Delete(p.item)
		if err := p.retry(withRedrive(ctx, due[i])); err != nil && !errors.Is(err, ErrDispatchedElsewhere) {
			zerolog.Ctx(ctx).Error().Err(err).Str(logkey.WorkItem, p.item).Str(logkey.Dispatch, due[i]).Msg("failed to re-drive a dispatch")
			errs = append(errs, err)
		}
	}
	return len(todo), errors.Join(errs...)
}
