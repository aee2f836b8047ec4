package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/sandbox"
)

// link is the run's line to serve once the exchange granted its run token: every report
// goes through it, and its stop poller, a goroutine of its own, refreshes the token and
// asks serve whether to stop. A stop's reason lives here.
type link struct {
	now func() time.Time

	mu sync.Mutex
	// serve is serve's client with the current run token, issued when and valid until.
	serve           *appclient.Client
	issued, expires time.Time
	// reason is serve's reason to stop, once it said so; vm what a stop kills at once,
	// once the session opened.
	reason string
	vm     *sandbox.Session

	// steers are the writers' /steer words serve's answers carry, for the agent.
	steers *steerHub
}

func newLink(serve *appclient.Client, expires time.Time, now func() time.Time) *link {
	return &link{now: now, serve: serve, issued: now(), expires: expires, steers: newSteerHub(now)}
}

// client is serve's client with the current run token.
func (l *link) client() *appclient.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.serve
}

// stopped is serve's reason to stop, once it said so.
func (l *link) stopped() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

// guard gives the stop poller the session to kill when serve says stop; it returns
// serve's reason when serve said so already, and the poller found no VM to kill.
func (l *link) guard(vm *sandbox.Session) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.vm = vm
	return l.reason
}

// pollStop asks serve every period whether to stop; when it says so, or refuses the
// run's token (the run is over as far as serve knows), the run's context ends with
// errStopped and the VM is killed at once. The writers' steers in its answers go to the
// agent (steerHub). It also refreshes the run token once half of its life is gone, so a
// run may outlive one token.
func (l *link) pollStop(ctx context.Context, period time.Duration, cancel context.CancelCauseFunc) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.refreshToken(ctx)
		st, err := l.client().ShouldStop(ctx)
		var refused *appclient.Refused
		switch {
		case errors.As(err, &refused):
			st = wire.ShouldStop{Stop: true, Reason: "serve refused the run's token: " + refused.Reason}
		case err != nil:
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to ask serve whether to stop")
			continue
		}
		l.steers.offer(st.Steers)
		if !st.Stop {
			continue
		}
		reason := st.Reason
		if reason == "" {
			reason = "serve said stop"
		}
		l.mu.Lock()
		l.reason = reason
		vm := l.vm
		l.mu.Unlock()
		zerolog.Ctx(ctx).Info().Str(logKeyReason, reason).Msg("stopping: killing the VM")
		cancel(fmt.Errorf("%w: %s", errStopped, reason))
		if vm != nil {
			_ = vm.Kill()
		}
		return
	}
}

// refreshToken gets a new run token once the current one has lived half its life.
func (l *link) refreshToken(ctx context.Context) {
	l.mu.Lock()
	due := l.now().After(l.issued.Add(l.expires.Sub(l.issued) / 2))
	l.mu.Unlock()
	if !due {
		return
	}
	fresh, err := l.client().Refresh(ctx)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to refresh the run token")
		return
	}
	// Not masked: bumper never prints a run token, and an ::add-mask:: line printed while
	// the agent's output is quoted (::stop-commands::) would print it in clear.
	l.mu.Lock()
	l.serve = l.serve.WithRunToken(fresh.RunToken)
	l.issued, l.expires = l.now(), fresh.RunTokenExpiresAt
	l.mu.Unlock()
}

// progress reports a state to serve; pull and head name the pull request and the head
// the run pushed to it, once there are both.
func (l *link) progress(ctx context.Context, state, plan string, pull int, head string) error {
	if err := l.client().Progress(ctx, wire.Progress{State: state, Plan: plan, PullRequest: pull, HeadCommit: head}); err != nil {
		return fmt.Errorf("failed to report %s to serve: %w", state, err)
	}
	return nil
}

// waiting tells serve the run waits for a VM slot, or no longer does. The status comment
// is all it changes, so a failure is logged and the run goes on (a serve older than the
// call-back refuses it).
func (l *link) waiting(ctx context.Context, waits bool) {
	if err := l.client().Waiting(ctx, wire.Waiting{Waiting: waits}); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Bool("waiting", waits).Msg("failed to tell serve the run waits for a VM slot")
	}
}
