// Package runqueue is the arithmetic of a repository's queue of Bumper runs waiting for
// a runner: which runs wait, each one's place (first dispatched first), and when it may
// start, going by how long the repository's recent runs took. It reads records only; the
// caller writes the places it works out.
package runqueue

import (
	"slices"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
)

// Refresh is how often at most a waiting item's place is written again: the queue
// moves with every run that starts or ends, and each write is an edit of its status
// comment.
const Refresh = time.Minute

// recentRuns is how many of the repository's finished runs the estimate goes by.
const recentRuns = 10

// Waiting reports whether rec's current run is dispatched and waits for a runner.
func Waiting(rec *ledger.Record) (*ledger.Attempt, bool) {
	a := rec.CurrentAttempt()
	if a == nil || a.RunID == 0 || a.Runner != "" || a.Outcome != "" || !rec.State.Active() {
		return nil, false
	}
	return a, true
}

// RunDuration is the median time a runner spent on the repository's last recentRuns
// finished runs; zero when none finished since runners were timed.
func RunDuration(recs []*ledger.Record) time.Duration {
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

// Entry is one waiting work item (by its ledger ID) and the place to write on it.
type Entry struct {
	ID    string
	Place ledger.QueuePlace
}

// Places are the places of the repository's waiting items among recs, first dispatched
// first, each with an estimate of when it starts: its place times the median recent run
// (one runner assumed: more runners start it sooner). An item alone in the queue with
// nothing to estimate from gets none: "waiting for a runner" is all there is to say,
// and the attempt's line says it.
func Places(recs []*ledger.Record, now time.Time) []Entry {
	type queued struct {
		id         string
		dispatched time.Time
	}
	var q []queued
	for _, rec := range recs {
		if a, ok := Waiting(rec); ok {
			q = append(q, queued{rec.ID(), a.StartedAt})
		}
	}
	slices.SortFunc(q, func(a, b queued) int { return a.dispatched.Compare(b.dispatched) })
	per := RunDuration(recs)
	var out []Entry
	for i, w := range q {
		place := ledger.QueuePlace{Position: i + 1, Of: len(q), Estimate: time.Duration(i+1) * per, At: now}
		if place.Of == 1 && place.Estimate == 0 {
			continue
		}
		out = append(out, Entry{w.id, place})
	}
	return out
}

// Due reports whether place should be written over old, the place written before (nil:
// none): only when it changed (place or estimate), and at most once a Refresh, so that
// a busy queue does not edit every waiting item's status comment with every run.
func Due(old *ledger.QueuePlace, place ledger.QueuePlace) bool {
	return old == nil || !(old.Position == place.Position && old.Of == place.Of && old.Estimate == place.Estimate ||
		place.At.Sub(old.At) < Refresh)
}
