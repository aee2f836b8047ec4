// Package ghemu is Bumper's GitHub emulator: one in-process GitHub (REST API, App and
// installation auth, a real git smart-HTTP server, webhooks with real signatures, an
// Actions OIDC issuer, a local Actions runner, a web view) that every test, the demo
// and curious users share. Its routes and bodies follow GitHub's OpenAPI description,
// and in test mode every exchange is checked against it (package fidelity).
//
// This package wires the rooms together and is the API tests and cmd/bumper use. The
// rooms: state (the world and its lock), render (GitHub's JSON objects), rest (the REST
// API and git's access rules), conversation (comments, reviews, threads, merges, branch
// updates and moved refs, for the REST API and the web view's forms alike), web (the
// web view, its forms and the manifest pages), actions
// (workflow runs and the local runner), webhook (deliveries), oidc (the issuer),
// gitserver (git over smart HTTP), fidelity (the checks against GitHub's
// descriptions), emutest (the test harness). docs/emulator.md says what each lock
// guards.
package ghemu

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/actions"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/faults"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/oidc"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/rest"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/ghemu/web"
	"github.com/bumperdev/bumper/ghemu/webhook"
	"github.com/bumperdev/bumper/internal/pktline"
)

// Options configure an Emulator.
type Options struct {
	// StateDir keeps the state, the App's private key and the git repositories across
	// restarts. Empty: a temporary directory removed by Close, and the world is never
	// written to it (nothing outlives the emulator).
	StateDir string
	// Seed is the starting world when StateDir holds no state yet. Nil: DefaultSeed().
	Seed *Seed
	// WebhookURL receives the App's webhooks; empty: none are sent (they are still
	// recorded as failed deliveries, ready for redelivery).
	WebhookURL string
	// WebhookSecret signs deliveries (X-Hub-Signature-256). Empty: generated.
	WebhookSecret string
	// RateLimit is the hourly request budget of each credential; 0: GitHub's 5000.
	RateLimit int
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Logger receives the emulator's own log; zero value: nothing is logged.
	Logger zerolog.Logger
	// NewKey makes the RSA keys a new state directory needs, by purpose (KeyApp, the
	// App's private key; KeyOIDC, the Actions OIDC issuer's); nil: a new 2048-bit key
	// each. Making one takes a tenth of a second or more: tests that start many
	// emulators hand out keys made once (emutest does).
	NewKey func(purpose string) (*rsa.PrivateKey, error)
	// WebhookCheck, when set, sees every webhook body before it is sent (the fidelity
	// checker validates them against GitHub's webhook schema).
	WebhookCheck func(event string, body []byte)
	// Runner, when set, makes the emulator execute dispatched workflow runs itself, as
	// GitHub's Actions runner would (package actions). Nil: runs stay queued until
	// someone moves them through the control API.
	Runner *Runner
	// Faults, when set, is a plan of GitHub's faults to inject: 502s, 503s, secondary
	// rate limits, 422 races, latency, dropped and duplicated webhook deliveries
	// (package faults; bumper emulator --faults FILE). Nil: none.
	Faults *FaultsConfig
}

// FaultsConfig is a plan of faults (faults.Config): the YAML of --faults FILE.
type FaultsConfig = faults.Config

// Faults injects a plan's faults and counts them (faults.Faults).
type Faults = faults.Faults

// FaultCounts are the faults injected so far, by kind (faults.Counts).
type FaultCounts = faults.Counts

// LoadFaults reads a plan of faults from a YAML file, strictly (faults.Load).
func LoadFaults(path string) (*FaultsConfig, error) { return faults.Load(path) }

// Runner makes the emulator execute dispatched workflow runs (actions.Runner).
type Runner = actions.Runner

// RunUpdate moves a workflow run, as a runner picking it up and finishing it would
// (actions.RunUpdate).
type RunUpdate = actions.RunUpdate

// RunInfo is what a runner learns about a dispatched run, and what became of it
// (actions.RunInfo).
type RunInfo = actions.RunInfo

// OIDCClaims are the claims of an Actions ID token that Bumper checks (oidc.Claims).
type OIDCClaims = oidc.Claims

// WorkflowsDir is where GitHub keeps workflows; an installation token needs
// `workflows: write` to push commits that touch a file below it.
const WorkflowsDir = rest.WorkflowsDir

// Emulator is a GitHub on loopback. Create it with New, serve Handler() and set the
// address it is reachable at with SetBaseURL (Start does both).
type Emulator struct {
	store   *state.Store
	git     *gitserver.Server
	hooks   *webhook.Sender
	actions *actions.Actions
	api     *rest.API
	web     *web.View
	oidc    *oidc.Issuer
	commits *render.Commits
	conv    *conversation.Service
	faults  *faults.Faults
	log     zerolog.Logger
	dir     string
	tempDir bool
	server  *http.Server
}

const (
	oidcKeyFile = "oidc-signing-key.pem"
	gitDir      = "git"
)

// The purposes of the keys Options.NewKey makes.
const (
	KeyApp  = "app"
	KeyOIDC = "oidc"
)

// keyFor is newKey for one purpose; nil when newKey is.
func keyFor(newKey func(string) (*rsa.PrivateKey, error), purpose string) func() (*rsa.PrivateKey, error) {
	if newKey == nil {
		return nil
	}
	return func() (*rsa.PrivateKey, error) { return newKey(purpose) }
}

// New creates an emulator, loading the state in opts.StateDir or seeding a new world.
func New(opts Options) (*Emulator, error) {
	e := &Emulator{dir: opts.StateDir, log: opts.Logger}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if e.dir == "" {
		d, err := os.MkdirTemp("", "bumper-emulator-")
		if err != nil {
			return nil, fmt.Errorf("failed to create a state directory: %w", err)
		}
		e.dir, e.tempDir = d, true
	} else if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create state directory %s: %w", e.dir, err)
	}
	if err := e.open(opts, now); err != nil {
		if e.hooks != nil {
			e.hooks.Close()
		}
		e.cleanupTemp()
		return nil, err
	}
	return e, nil
}

// open builds the rooms; New cleans up after a failure.
func (e *Emulator) open(opts Options, now func() time.Time) error {
	oidcKey, err := state.LoadOrCreateKey(filepath.Join(e.dir, oidcKeyFile), keyFor(opts.NewKey, KeyOIDC))
	if err != nil {
		return err
	}
	e.oidc = oidc.New(oidcKey, now)
	// The git server's callbacks are GitHub's access rules over the world, and a new
	// world is seeded with the git server: rules is set once the world is open, before
	// anything is served.
	var rules *rest.GitRules
	e.git, err = gitserver.New(gitserver.Options{
		Root: filepath.Join(e.dir, gitDir),
		Authorize: func(r *http.Request, owner, name string, access gitserver.Access) error {
			return rules.Authorize(r, owner, name, access)
		},
		CheckPush: func(r *http.Request, owner, name string, updates []pktline.RefUpdate) error {
			return rules.CheckPush(r, owner, name, updates)
		},
		GuardPaths: func(r *http.Request, owner, name string, updates []pktline.RefUpdate) *gitserver.PathGuard {
			return rules.GuardPaths(r, owner, name, updates)
		},
		Pushed: func(r *http.Request, owner, name string, updates []pktline.RefUpdate) {
			rules.Pushed(r, owner, name, updates)
		},
	})
	if err != nil {
		return fmt.Errorf("failed to start the git server: %w", err)
	}
	seed := opts.Seed
	e.store, err = state.Open(state.Options{Dir: e.dir, Now: now, Logger: e.log, NewKey: keyFor(opts.NewKey, KeyApp), Ephemeral: e.tempDir}, func(w *state.World) error {
		if seed == nil {
			seed = DefaultSeed()
		}
		if err := seed.Validate(); err != nil {
			return fmt.Errorf("invalid seed: %w", err)
		}
		return applySeed(w, e.git, seed)
	})
	if err != nil {
		return err
	}
	e.faults, err = faults.New(opts.Faults, faults.Options{Routes: rest.Routes(), Now: now})
	if err != nil {
		return fmt.Errorf("invalid faults: %w", err)
	}
	e.hooks = webhook.NewSender(e.store, opts.WebhookCheck, e.faults, e.log)
	e.commits = render.NewCommits(e.git)
	e.conv = conversation.New(e.git, e.hooks, e.commits, e.log)
	rules = rest.NewGitRules(e.store, e.conv)
	e.store.Do(func(w *state.World) {
		if opts.WebhookURL != "" {
			w.SetWebhookURL(opts.WebhookURL)
		}
		if opts.WebhookSecret != "" {
			w.SetWebhookSecret(opts.WebhookSecret)
		}
		if w.App().WebhookSecret == "" {
			w.SetWebhookSecret(state.RandomToken("whsec_"))
		}
	})
	if err := e.store.Save(); err != nil {
		return err
	}
	e.actions, err = actions.New(actions.Options{Store: e.store, Hooks: e.hooks, Commits: e.commits, OIDC: e.oidc,
		Logger: e.log, Runner: opts.Runner, StateDir: e.dir})
	if err != nil {
		return err
	}
	e.api = rest.New(rest.Options{Store: e.store, Git: e.git, Hooks: e.hooks, Actions: e.actions,
		Commits: e.commits, Conversation: e.conv, RateLimit: opts.RateLimit, Now: now, Logger: e.log, Faults: e.faults})
	e.web = web.New(e.store, e.git, e.conv, e.log)
	e.web.SetInstaller(e.installApp)
	return nil
}

// Start serves the emulator on addr ("127.0.0.1:0" picks a port) and sets the base URL
// to the address it listens on. It returns once the listener is open.
func (e *Emulator) Start(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", addr, err)
	}
	e.SetBaseURL("http://" + ln.Addr().String())
	e.server = &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := e.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error().Err(err).Msg("emulator server stopped")
		}
	}()
	return nil
}

// SetBaseURL tells the emulator where clients reach it ("http://127.0.0.1:8080"). Every
// URL it renders, the OIDC issuer and the clone URLs derive from it. The first time,
// the seeded installations are announced and the runs an earlier process left
// unfinished are settled.
func (e *Emulator) SetBaseURL(u string) {
	e.store.Do(func(w *state.World) {
		w.SetBaseURL(u)
		if !w.Announced() {
			w.SetAnnounced()
			for _, in := range w.Installations() {
				e.emitInstallation(w, in, "created")
			}
		}
		e.actions.RecoverOnce(w)
	})
}

// emitInstallation sends an installation webhook, with the repositories it covers.
func (e *Emulator) emitInstallation(w *state.World, in *state.Installation, action string) {
	repos := []render.Obj{}
	for _, rp := range w.Repos() {
		if w.InstallationFor(rp) == in {
			repos = append(repos, render.Obj{"id": rp.ID, "node_id": render.NodeID("R", rp.ID), "name": rp.Name,
				"full_name": rp.FullName(), "private": rp.Private})
		}
	}
	e.hooks.Emit(w, "installation", action, nil, in.Account, render.Obj{
		"installation": render.New(w, nil).Installation(in), "repositories": repos})
}

// Close stops serving, cancels the local runner's runs (their processes are stopped
// and the runs complete as cancelled), waits for webhook deliveries in flight, and
// removes a temporary state directory.
func (e *Emulator) Close() error {
	var err error
	if e.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = e.server.Shutdown(ctx)
		cancel()
	}
	e.actions.Shutdown()
	e.hooks.Close()
	e.cleanupTemp()
	return err
}

func (e *Emulator) cleanupTemp() {
	if e.tempDir {
		_ = os.RemoveAll(e.dir)
	}
}
