package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

// blockingHandler handles a delivery when told to, with err.
type blockingHandler struct {
	release chan error
	started chan struct{}
	ctxErr  chan error
}

func (h *blockingHandler) Handles() []string { return []string{"issues"} }

func (h *blockingHandler) Handle(ctx context.Context, _, _ string, _ []byte) error {
	h.started <- struct{}{}
	err := <-h.release
	h.ctxErr <- ctx.Err()
	return err
}

// TestAckScheduler: a delivery is answered only once handled, with the handler's error
// (which the dispatcher answers 500, for the redelivery sweep); a handler outlives the
// request GitHub gave up on; beyond the workers and the queue, a delivery is refused at
// once rather than accepted and lost.
func TestAckScheduler(t *testing.T) {
	h := &blockingHandler{release: make(chan error), started: make(chan struct{}, 4), ctxErr: make(chan error, 4)}
	s := newAckScheduler(0, 1, nil, nil)
	d := githubapp.Dispatch{Handler: h, EventType: "issues", DeliveryID: "d1"}

	// GitHub hangs up (its 10 s) while the handler works: the handler goes on, unaware.
	reqCtx, hangUp := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- s.Schedule(reqCtx, d) }()
	<-h.started
	select {
	case err := <-first:
		t.Fatalf("answered before the handler finished: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	// One worker busy, no queue: the next delivery is refused now, not accepted and lost.
	if err := s.Schedule(context.Background(), d); !errors.Is(err, errQueueFull) {
		t.Fatalf("a delivery beyond the workers and the queue: %v, want errQueueFull", err)
	}
	hangUp()
	failed := errors.New("GitHub answered 502")
	h.release <- failed
	if err := <-first; !errors.Is(err, failed) {
		t.Fatalf("the delivery's answer: %v, want the handler's error", err)
	}
	if err := <-h.ctxErr; err != nil {
		t.Fatalf("the handler's context ended with the request's: %v", err)
	}
	if err := s.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A worker free again: handled, answered nil.
	go func() { <-h.started; h.release <- nil }()
	if err := s.Schedule(context.Background(), d); err != nil {
		t.Fatalf("handled delivery: %v", err)
	}
	<-h.ctxErr
}
