package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

// errQueueFull answers a delivery that finds every worker busy and the queue full: a
// 500, which the redelivery sweep picks up.
var errQueueFull = errors.New("serve's webhook queue is full; the delivery is left for the redelivery sweep")

// ackScheduler handles each delivery before GitHub hears back: GitHub is the only
// durable queue Bumper has, so a delivery counts as delivered only once it was handled.
// One that fails (its handler's error: GitHub answered 5xx past ghretry's patience, say)
// or that a killed replica never finished is answered 500 or not at all, and the
// redelivery sweep (redeliver.go) has GitHub send it again; handlers are idempotent per
// delivery. GitHub waits 10 s for an answer: a handler that takes longer goes on (its
// context is detached from the request's), GitHub records a timeout, and the redelivery
// finds the work done. Workers bound how many deliveries are handled at once, queueSize
// how many may wait for one; beyond that the answer is errQueueFull at once. It also
// counts the deliveries in flight, so shutdown (and tests) can wait for them.
type ackScheduler struct {
	workers   chan struct{}
	queueSize int
	// onHandled learns each delivery's event, handling time and error.
	onHandled func(event string, elapsed time.Duration, err error)
	// onError learns a delivery's failure, for the log.
	onError func(ctx context.Context, d githubapp.Dispatch, err error)

	mu      sync.Mutex
	waiting int
	pending int
	waiters []chan struct{}
}

func newAckScheduler(queueSize, workers int, onHandled func(string, time.Duration, error), onError func(context.Context, githubapp.Dispatch, error)) *ackScheduler {
	return &ackScheduler{workers: make(chan struct{}, workers), queueSize: queueSize, onHandled: onHandled, onError: onError}
}

// Schedule implements githubapp.Scheduler: it returns once the delivery was handled,
// with the handler's error, which the dispatcher answers as a 500.
func (s *ackScheduler) Schedule(ctx context.Context, d githubapp.Dispatch) error {
	s.mu.Lock()
	if s.waiting >= s.queueSize+cap(s.workers) {
		s.mu.Unlock()
		return errQueueFull
	}
	s.waiting++
	s.pending++
	s.mu.Unlock()
	defer s.done()
	// The handler outlives GitHub's patience and a client that hung up: what it began,
	// it finishes.
	hctx := context.WithoutCancel(ctx)
	select {
	case s.workers <- struct{}{}:
	case <-ctx.Done():
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
		return ctx.Err()
	}
	defer func() { <-s.workers }()
	start := time.Now()
	err := d.Handler.Handle(hctx, d.EventType, d.DeliveryID, d.Payload)
	if s.onHandled != nil {
		s.onHandled(d.EventType, time.Since(start), err)
	}
	if err != nil && s.onError != nil {
		s.onError(hctx, d, err)
	}
	s.mu.Lock()
	s.waiting--
	s.mu.Unlock()
	if err != nil {
		return &handlerError{err}
	}
	return nil
}

// handlerError is a handler's failure, counted where it was handled (onHandled), so
// the dispatcher's error callback only answers it.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

func (s *ackScheduler) done() {
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
func (s *ackScheduler) wait(ctx context.Context) error {
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
