package app

import (
	"context"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

// trackingScheduler wraps go-githubapp's queue scheduler and counts the deliveries in
// flight, so shutdown (and tests) can wait for the queue to drain. A counter under a
// mutex, not a WaitGroup: deliveries arrive while someone waits.
type trackingScheduler struct {
	inner githubapp.Scheduler
	// onHandled learns each delivery's event, handling time and error.
	onHandled func(event string, elapsed time.Duration, err error)

	mu      sync.Mutex
	pending int
	waiters []chan struct{}
}

func newTrackingScheduler(queueSize, workers int, onHandled func(string, time.Duration, error), opts ...githubapp.SchedulerOption) *trackingScheduler {
	return &trackingScheduler{inner: githubapp.QueueAsyncScheduler(queueSize, workers, opts...), onHandled: onHandled}
}

// Schedule implements githubapp.Scheduler.
func (s *trackingScheduler) Schedule(ctx context.Context, d githubapp.Dispatch) error {
	s.mu.Lock()
	s.pending++
	s.mu.Unlock()
	d.Handler = &doneHandler{EventHandler: d.Handler, done: s.done, onHandled: s.onHandled}
	if err := s.inner.Schedule(ctx, d); err != nil {
		s.done()
		return err
	}
	return nil
}

func (s *trackingScheduler) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	if s.pending == 0 {
		for _, w := range s.waiters {
			close(w)
		}
		s.waiters = nil
	}
}

// wait blocks until no delivery is in flight, or ctx ends.
func (s *trackingScheduler) wait(ctx context.Context) error {
	s.mu.Lock()
	if s.pending == 0 {
		s.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type doneHandler struct {
	githubapp.EventHandler
	done      func()
	onHandled func(string, time.Duration, error)
}

func (h *doneHandler) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	defer h.done()
	start := time.Now()
	err := h.EventHandler.Handle(ctx, eventType, deliveryID, payload)
	if h.onHandled != nil {
		h.onHandled(eventType, time.Since(start), err)
	}
	return err
}
