package workitem

import (
	"context"
	"errors"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/runqueue"
)

// QueueRefresh is how often at most a waiting item's place is written again: the queue
// moves with every run that starts or ends, and each write is an edit of its status
// comment.
const QueueRefresh = runqueue.Refresh

// refreshQueue writes each waiting item's place among the repository's Bumper runs
// waiting for a runner (runqueue.Places). An item's place is written when it changed,
// at most once a QueueRefresh.
func (s *Service) refreshQueue(ctx context.Context, gh GitHub, repo string) error {
	var errs []error
	for _, w := range runqueue.Places(s.idx.ByRepository(repo), s.now().UTC()) {
		if err := s.placeInQueue(ctx, gh, w.ID, w.Place); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// placeInQueue writes one waiting item's place, unless it is the same as written (place
// and estimate) or was written less than QueueRefresh ago.
func (s *Service) placeInQueue(ctx context.Context, gh GitHub, id string, place ledger.QueuePlace) error {
	w, err := wire.ParseWorkItem(id)
	if err != nil {
		return err
	}
	defer s.lock(id)()
	it, err := s.load(ctx, gh, Repo{FullName: w.Repository}, w.Issue)
	if err != nil || it == nil {
		return err
	}
	if _, ok := runqueue.Waiting(it.rec); !ok || !runqueue.Due(it.rec.Queue, place) {
		return nil
	}
	it.rec.Queue = &place
	return s.save(ctx, gh, it, "")
}
