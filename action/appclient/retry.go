package appclient

import (
	"context"
	"time"
)

// retryPolicy is how often and how patiently a request is repeated.
type retryPolicy struct {
	attempts int           // in all, the first included
	first    time.Duration // the wait after the first failure; doubled after each
	max      time.Duration // the longest wait
}

// defaultRetry: four attempts over about 3.5 seconds. A runner that cannot reach serve
// for longer has a problem the operator must see, not one to wait out.
var defaultRetry = retryPolicy{attempts: 4, first: 500 * time.Millisecond, max: 5 * time.Second}

// do calls try until it succeeds, says its failure is final, the attempts are spent or
// ctx ends. try reports whether its error may be retried. It returns the last error and
// how many attempts were made.
func (p retryPolicy) do(ctx context.Context, try func(context.Context) (bool, error)) error {
	_, err := p.run(ctx, try)
	return err
}

func (p retryPolicy) run(ctx context.Context, try func(context.Context) (bool, error)) (int, error) {
	wait := p.first
	for n := 1; ; n++ {
		retry, err := try(ctx)
		if err == nil || !retry || n >= p.attempts {
			return n, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, err
		case <-t.C:
		}
		wait = min(2*wait, p.max)
	}
}
