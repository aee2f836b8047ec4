package workitem

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// QueueRefresh is how often at most a waiting item's place is written again: the queue
// moves with every run that starts or ends, and each write is an edit of its status
// comment.
const QueueRefresh = time.Minute

// recentRuns is how many of the repository's finished runs the estimate goes by.
const recentRuns = 10

// waiting reports whether rec's current run is dispatched and waits for a runner.
func waiting(rec *ledger.Record) (*ledger.Attempt, bool) {
	a := rec.CurrentAttempt()
	if a == nil || a.RunID == 0 || a.Runner != "" || a.Outcome != "" || !rec.State.Active() {
		return nil, false
	}
	return a, true
}

// runDuration is the median time a runner spent on the repository's last recentRuns
// finished runs; zero when none finished since runners were timed.
func runDuration(recs []*ledger.Record) time.Duration {
	type run struct {
		ended time.Time
		d     time.Duration
	}
	var runs []run
	for _, rec := range recs {
		for _, a := range rec.Attempts {
			if !a.RunnerAt.IsZero() && a.EndedAt.After(a.RunnerAt) {
				runs = append(runs, run{a.EndedAt, a.EndedAt.Sub(a.RunnerAt)})
			}
		}
	}
	slices.SortFunc(runs, func(a, b run) int { return b.ended.Compare(a.ended) })
	if len(runs) > recentRuns {
		runs = runs[:recentRuns]
	}
	if len(runs) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(runs))
	for i, r := range runs {
		ds[i] = r.d
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// refreshQueue writes each waiting item's place among the repository's Bumper runs
// waiting for a runner, first dispatched first, with an estimate of when it starts:
// its place times the median recent run (one runner assumed: more runners start it
// sooner). An item's place is written when it changed, at most once a QueueRefresh.
func (s *Service) refreshQueue(ctx context.Context, gh GitHub, repo string) error {
	recs := s.idx.ByRepository(repo)
	type queued struct {
		id         string
		dispatched time.Time
	}
	var q []queued
	for _, rec := range recs {
		if a, ok := waiting(rec); ok {
			q = append(q, queued{rec.ID(), a.StartedAt})
		}
	}
	slices.SortFunc(q, func(a, b queued) int { return a.dispatched.Compare(b.dispatched) })
	per := runDuration(recs)
	now := s.now().UTC()
	var errs []error
	for i, w := range q {
		place := ledger.QueuePlace{Position: i + 1, Of: len(q), Estimate: time.Duration(i+1) * per, At: now}
		if place.Of == 1 && place.Estimate == 0 {
			// Alone and nothing to estimate from: "waiting for a runner" is all there
			// is to say, and the attempt's line says it.
			continue
		}
		if err := s.placeInQueue(ctx, gh, w.id, place); err != nil {
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
	if _, ok := waiting(it.rec); !ok {
		return nil
	}
	if old := it.rec.Queue; old != nil && (old.Position == place.Position && old.Of == place.Of && old.Estimate == place.Estimate ||
		place.At.Sub(old.At) < QueueRefresh) {
		return nil
	}
	it.rec.Queue = &place
	return s.save(ctx, gh, it, "")
}
