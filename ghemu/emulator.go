// Package ghemu is Bumper's GitHub emulator: one in-process GitHub (REST API, App and
// installation auth, a real git smart-HTTP server, webhooks with real signatures, an
// Actions OIDC issuer) that every test, the demo and curious users share. Its routes and
// bodies follow GitHub's OpenAPI description, and in test mode every exchange is checked
// against it (package fidelity).
package ghemu

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/fsutil"
)

// Options configure an Emulator.
type Options struct {
	// StateDir keeps the state, the App's private key and the git repositories across
	// restarts. Empty: a temporary directory removed by Close.
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
	// WebhookCheck, when set, sees every webhook body before it is sent (the fidelity
	// checker validates them against GitHub's webhook schema).
	WebhookCheck func(event string, body []byte)
	// Runner, when set, makes the emulator execute dispatched workflow runs itself, as
	// GitHub's Actions runner would (runner.go). Nil: runs stay queued until someone
	// moves them through the control API.
	Runner *Runner
}

// Emulator is a GitHub on loopback. Create it with New, serve Handler() and set the
// address it is reachable at with SetBaseURL (Start does both).
type Emulator struct {
	mu      sync.Mutex
	st      *state
	appKey  *rsa.PrivateKey
	oidc    *oidcIssuer
	git     *gitserver.Server
	routes  router
	hooks   *webhookSender
	limits  map[string]*rateWindow
	baseURL string
	dir     string
	tempDir bool
	now     func() time.Time
	log     zerolog.Logger
	limit   int
	server  *http.Server

	webhookCheck func(event string, body []byte)
	// commits caches what git said of commits by repository and SHA: commits never
	// change, and rendering a list of workflow runs or check runs would otherwise start
	// one git process per item. Guarded by mu.
	commits map[string]*gitserver.CommitInfo

	// runner executes dispatched runs; nil without Options.Runner.
	runner *localRunner
	// runsChanged is closed, and replaced, whenever a workflow run moves (WaitRun).
	// Guarded by mu.
	runsChanged chan struct{}
	// recovered is set once the local runner's unfinished runs of an earlier process
	// were settled (recoverRunsLocked). Guarded by mu.
	recovered bool
	// logKey signs the job log download URLs.
	logKey []byte
	// drops counts, by event, the next deliveries to fail without reaching the
	// webhook URL (DropDeliveries). Guarded by mu.
	drops map[string]int
}

const (
	stateFile   = "state.json"
	appKeyFile  = "app-private-key.pem"
	oidcKeyFile = "oidc-signing-key.pem"
	gitDir      = "git"
)

// New creates an emulator, loading the state in opts.StateDir or seeding a new world.
func New(opts Options) (*Emulator, error) {
	e := &Emulator{
		dir:     opts.StateDir,
		now:     opts.Now,
		log:     opts.Logger,
		limit:   opts.RateLimit,
		limits:  map[string]*rateWindow{},
		commits: map[string]*gitserver.CommitInfo{},

		webhookCheck: opts.WebhookCheck,
		runsChanged:  make(chan struct{}),
		logKey:       []byte(randomToken("")),
		drops:        map[string]int{},
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.limit == 0 {
		e.limit = 5000
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
	var err error
	if e.appKey, err = loadOrCreateKey(filepath.Join(e.dir, appKeyFile)); err != nil {
		return nil, err
	}
	oidcKey, err := loadOrCreateKey(filepath.Join(e.dir, oidcKeyFile))
	if err != nil {
		return nil, err
	}
	e.oidc = newOIDCIssuer(oidcKey)
	e.git, err = gitserver.New(gitserver.Options{
		Root:       filepath.Join(e.dir, gitDir),
		Authorize:  e.authorizeGit,
		CheckPush:  e.checkPush,
		GuardPaths: e.guardPaths,
		Pushed:     e.pushed,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to start the git server: %w", err)
	}
	if err := e.loadOrSeed(opts.Seed); err != nil {
		e.cleanupTemp()
		return nil, err
	}
	if opts.WebhookURL != "" {
		e.st.App.WebhookURL = opts.WebhookURL
	}
	if opts.WebhookSecret != "" {
		e.st.App.WebhookSecret = opts.WebhookSecret
	}
	if e.st.App.WebhookSecret == "" {
		e.st.App.WebhookSecret = randomToken("whsec_")
	}
	if err := e.save(); err != nil {
		e.cleanupTemp()
		return nil, err
	}
	if opts.Runner != nil {
		if e.runner, err = newLocalRunner(*opts.Runner, e.dir); err != nil {
			e.cleanupTemp()
			return nil, err
		}
	}
	e.hooks = newWebhookSender(e)
	e.registerRoutes()
	return e, nil
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
// URL it renders, the OIDC issuer and the clone URLs derive from it.
func (e *Emulator) SetBaseURL(u string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.baseURL = strings.TrimRight(u, "/")
	if !e.st.Announced {
		e.st.Announced = true
		for _, in := range e.sortedInstallations() {
			e.emitInstallation(in, "created")
		}
		e.saveLocked()
	}
	if !e.recovered {
		e.recovered = true
		e.recoverRunsLocked()
	}
}

// emitInstallation sends an installation webhook, with the repositories it covers.
func (e *Emulator) emitInstallation(in *installation, action string) {
	repos := []obj{}
	for _, rp := range e.sortedRepos(func(rp *repo) bool { return e.st.installationFor(rp) == in }) {
		repos = append(repos, obj{"id": rp.ID, "node_id": nodeID("R", rp.ID), "name": rp.Name,
			"full_name": rp.fullName(), "private": rp.Private})
	}
	e.emit("installation", action, nil, in.Account, obj{"installation": e.renderInstallation(in),
		"repositories": repos})
}

// Ping sends the "ping" webhook GitHub sends when a webhook is configured.
func (e *Emulator) Ping() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.emit("ping", "", nil, "", obj{"zen": "Keep it logically awesome.", "hook_id": e.st.App.ID,
		"hook": obj{"type": "App", "id": e.st.App.ID, "name": "web", "active": true,
			"events": e.st.App.Events, "app_id": e.st.App.ID,
			"config":     obj{"content_type": "json", "insecure_ssl": "0", "url": e.st.App.WebhookURL},
			"updated_at": ts(e.st.App.CreatedAt), "created_at": ts(e.st.App.CreatedAt),
			"deliveries_url": e.baseURL + "/app/hook/deliveries",
			"url":            e.baseURL + "/app/hook/config",
			"ping_url":       e.baseURL + "/app/hook/pings"}})
}

// BaseURL is the address clients reach the emulator at.
func (e *Emulator) BaseURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.baseURL
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
	e.shutdownRunner()
	e.hooks.close()
	e.cleanupTemp()
	return err
}

func (e *Emulator) cleanupTemp() {
	if e.tempDir {
		_ = os.RemoveAll(e.dir)
	}
}

// AppID is the emulated App's ID.
func (e *Emulator) AppID() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.App.ID
}

// AppKeyPath is the PEM file holding the App's private key, as GitHub would let an admin
// download it.
func (e *Emulator) AppKeyPath() string { return filepath.Join(e.dir, appKeyFile) }

// AppKeyPEM is the App's private key in PEM form.
func (e *Emulator) AppKeyPEM() []byte { return keyPEM(e.appKey) }

// keyPEM is an RSA private key in the PKCS #1 PEM form GitHub hands out App keys in.
func keyPEM(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// WebhookSecret is the secret the emulator signs deliveries with.
func (e *Emulator) WebhookSecret() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.App.WebhookSecret
}

// SetWebhookURL changes where deliveries go (the App's webhook configuration).
func (e *Emulator) SetWebhookURL(u string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.App.WebhookURL = u
	e.saveLocked()
}

// UserToken is the personal access token of a seeded user, or "" if there is none.
func (e *Emulator) UserToken(login string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if u := e.st.Users[key(login)]; u != nil {
		return u.Token
	}
	return ""
}

// Users lists the people with personal tokens, sorted by login.
func (e *Emulator) Users() []UserInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []UserInfo
	for _, u := range e.st.Users {
		if u.Type == "User" && u.Token != "" {
			out = append(out, UserInfo{Login: u.Login, Token: u.Token})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Login < out[j].Login })
	return out
}

// UserInfo names a seeded person and their personal access token.
type UserInfo struct {
	Login string
	Token string
}

// TokenInfo is an installation token the emulator minted, for tests that check what a
// run did with its token (that it was revoked, say).
type TokenInfo struct {
	Value          string
	InstallationID int64
	// Repositories are the owner/name of the repositories it is scoped to; empty: all of
	// the installation's.
	Repositories []string
	Permissions  map[string]string
	ExpiresAt    time.Time
	Revoked      bool
}

// InstallationTokens lists the installation tokens minted so far, oldest expiry first.
func (e *Emulator) InstallationTokens() []TokenInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []TokenInfo
	for _, t := range e.st.Tokens {
		ti := TokenInfo{Value: t.Value, InstallationID: t.InstallationID, Permissions: maps.Clone(t.Permissions), ExpiresAt: t.ExpiresAt, Revoked: t.Revoked}
		for _, id := range t.RepoIDs {
			for _, rp := range e.st.Repos {
				if rp.ID == id {
					ti.Repositories = append(ti.Repositories, rp.fullName())
				}
			}
		}
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ExpiresAt.Before(out[j].ExpiresAt) })
	return out
}

// InstallationID returns the ID of the App's installation on account, or 0.
func (e *Emulator) InstallationID(account string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, in := range e.st.Installations {
		if strings.EqualFold(in.Account, account) {
			return in.ID
		}
	}
	return 0
}

// Git is the emulator's git server, for tests that create commits without a clone.
func (e *Emulator) Git() *gitserver.Server { return e.git }

func loadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		block, _ := pem.Decode(raw)
		if block == nil {
			return nil, fmt.Errorf("failed to read %s: no PEM block; delete it to generate a new key", path)
		}
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("failed to parse the RSA key in %s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("failed to generate an RSA key: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, keyPEM(k), 0o600); err != nil {
		return nil, err
	}
	return k, nil
}

func (e *Emulator) loadOrSeed(seed *Seed) error {
	raw, err := os.ReadFile(filepath.Join(e.dir, stateFile))
	switch {
	case err == nil:
		var st state
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("failed to parse %s: %w; remove the state directory to start afresh",
				filepath.Join(e.dir, stateFile), err)
		}
		e.st = &st
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("failed to read the emulator state: %w", err)
	}
	if seed == nil {
		seed = DefaultSeed()
	}
	if err := seed.Validate(); err != nil {
		return fmt.Errorf("invalid seed: %w", err)
	}
	return e.applySeed(seed)
}

// saveLocked writes the whole state atomically and logs a failure: a handler that
// already changed the state has nobody to return the error to. Callers hold e.mu.
func (e *Emulator) saveLocked() {
	if err := e.save(); err != nil {
		e.log.Error().Err(err).Msg("failed to save emulator state")
	}
}

func (e *Emulator) save() error {
	raw, err := json.Marshal(e.st)
	if err != nil {
		return fmt.Errorf("failed to encode the emulator state: %w", err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(e.dir, stateFile), raw, 0o600)
}
