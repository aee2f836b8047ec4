// Package emutest starts Bumper's GitHub emulator for tests, with every exchange and
// webhook checked against GitHub's own descriptions.
package emutest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
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
	// keys are the RSA keys every emulator of the process shares, one per purpose:
	// making a 2048-bit key was two fifths of the App's tests' time.
	keysMu sync.Mutex
	keys   map[string]*rsa.PrivateKey
}

// sharedKey is the process's key for purpose, made on first use.
func sharedKey(purpose string) (*rsa.PrivateKey, error) {
	shared.keysMu.Lock()
	defer shared.keysMu.Unlock()
	if k := shared.keys[purpose]; k != nil {
		return k, nil
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if shared.keys == nil {
		shared.keys = map[string]*rsa.PrivateKey{}
	}
	shared.keys[purpose] = k
	return k, nil
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
	if opts.NewKey == nil {
		opts.NewKey = sharedKey
	}
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
