// Package redrive is the schedule of dispatches to re-drive: a dispatch guard ref whose
// record shows no dispatch may be a dispatch in flight on another replica, or one whose
// replica died between the ref and the record. Each such dispatch waits out a grace
// period (by then a live replica would have written its record), then its event is
// handled again, marked in its context as the re-drive of that dispatch key, so that
// the dispatch may take the key's guard ref over.
package redrive

import (
	"context"
	"sort"
	"sync"
	"time"
)

// RefPrefix holds the refs that make a re-drive exactly-once: a dispatch guard ref whose
// dispatch never happened is re-driven by the one replica that creates
// refs/bumper/redrive/<key>.
const RefPrefix = "refs/bumper/redrive/"

// Pending is one dispatch waiting out its grace period: its dispatch key, its work item,
// when it is due, and the re-handling of its event.
type Pending struct {
	Key, Item string
	Due       time.Time
	Retry     func(ctx context.Context) error
}

// Schedule holds the pending re-drives, one per dispatch key. It is safe for concurrent
// use, and its zero value is empty.
type Schedule struct {
	mu sync.Mutex
	m  map[string]Pending
}

// Add schedules p unless its key is already scheduled, and reports whether it did.
func (s *Schedule) Add(p Pending) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]Pending{}
	}
	if _, ok := s.m[p.Key]; ok {
		return false
	}
	s.m[p.Key] = p
	return true
}

// TakeDue removes the re-drives due by now from the schedule and returns them, oldest
// first.
func (s *Schedule) TakeDue(now time.Time) []Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []Pending
	for k, p := range s.m {
		if !p.Due.After(now) {
			due = append(due, p)
			delete(s.m, k)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].Due.Before(due[j].Due) })
	return due
}

type ctxKey struct{}

// With marks ctx as the re-drive of one dispatch key: dispatch may then take over that
// key's guard ref once it wins the re-drive ref.
func With(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, ctxKey{}, key)
}

// Of is the dispatch key ctx re-drives (With), "" when it is no re-drive.
func Of(ctx context.Context) string {
	k, _ := ctx.Value(ctxKey{}).(string)
	return k
}
