// Package emutest starts Bumper's GitHub emulator for tests, with every exchange and
// webhook checked against GitHub's own descriptions.
package emutest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu"
)

// shared holds the loaded descriptions for every test of the process: loading them is
// the slow part of starting a checked emulator.
var shared struct {
	once sync.Once
	c    *ghemu.Checker
	err  error
}

// Option changes what New checks.
type Option func(*config)

type config struct {
	invalidRequests bool
	observe         func(*http.Request)
}

// Observe calls fn with every request the emulator receives, before it is served (a
// benchmark counts API calls with it). fn must not read the body.
func Observe(fn func(*http.Request)) Option { return func(c *config) { c.observe = fn } }

// AllowInvalidRequests is for tests that send malformed requests on purpose: what the
// clients sent is not held against the test; the emulator's answers still are.
func AllowInvalidRequests() Option { return func(c *config) { c.invalidRequests = true } }

// New starts an emulator on an httptest server with fidelity checks on: when the test
// ends, any request, response or webhook body that differed from GitHub's descriptions
// fails it. opts.WebhookCheck is replaced by the checker's.
func New(tb testing.TB, opts ghemu.Options, options ...Option) *ghemu.Emulator {
	var cfg config
	for _, o := range options {
		o(&cfg)
	}
	tb.Helper()
	shared.once.Do(func() { shared.c, shared.err = ghemu.NewChecker() })
	if shared.err != nil {
		tb.Fatalf("failed to load GitHub's descriptions: %v", shared.err)
	}
	ck := shared.c.Fork()
	opts.WebhookCheck = ck.CheckWebhook
	e, err := ghemu.New(opts)
	if err != nil {
		tb.Fatalf("failed to create the emulator: %v", err)
	}
	h := ck.Wrap(e.Handler())
	if cfg.observe != nil {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cfg.observe(r)
			inner.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	e.SetBaseURL(srv.URL)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.WaitWebhooks(ctx)
		srv.Close()
		_ = e.Close()
		if m := ck.Mismatches(!cfg.invalidRequests); len(m) > 0 {
			tb.Errorf("the emulator differed from GitHub's descriptions %d times:\n%s", len(m), strings.Join(m, "\n"))
		}
	})
	return e
}
