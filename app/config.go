// Package app is Bumper's GitHub App, the control plane: configuration, server wiring,
// and the HTTP surface (webhooks, token exchange, run call-backs, health).
package app

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// EnvPrefix starts every environment override: BUMPER_GITHUB_APP_WEBHOOK_SECRET,
// BUMPER_GITHUB_APP_PRIVATE_KEY, BUMPER_RUN_TOKEN_KEY, BUMPER_ADDRESS, ...
const EnvPrefix = "BUMPER_"

// Config is `bumper serve`'s configuration file.
type Config struct {
	// GitHub is go-githubapp's configuration: API URLs and the App's credentials.
	GitHub githubapp.Config `yaml:"github"`
	Server ServerConfig     `yaml:"server"`
	Bumper BumperConfig     `yaml:"bumper"`
	Log    LogConfig        `yaml:"log"`
}

// ServerConfig is the HTTP side.
type ServerConfig struct {
	Address string `yaml:"address"`
	// MetricsAddress, when set, is a second listener for /metrics, /healthz and
	// /readyz, kept off the webhook listener that faces GitHub; it listens before the
	// start-up rebuild, so /readyz says 503 while that runs. Empty: /metrics is served
	// on Address.
	MetricsAddress  string        `yaml:"metrics_address"`
	WebhookPath     string        `yaml:"webhook_path"`
	Workers         int           `yaml:"workers"`
	QueueSize       int           `yaml:"queue_size"`
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// RedeliverInterval is how often serve asks GitHub again for the App's failed
	// webhook deliveries (also once at start); 0 turns that off.
	RedeliverInterval time.Duration `yaml:"redeliver_interval"`
	// RedeliverWindow is how far back each sweep looks.
	RedeliverWindow time.Duration `yaml:"redeliver_window"`
	// DispatchGrace is how long a dispatch guard ref may exist without its dispatch in
	// the work item's record before a replica that meets it re-drives the dispatch (its
	// replica died between the ref and the record).
	DispatchGrace time.Duration `yaml:"dispatch_grace"`
}

// maxRedeliverWindow is how long GitHub keeps an App's webhook deliveries.
const maxRedeliverWindow = 72 * time.Hour

// BumperConfig is the App's own behaviour.
type BumperConfig struct {
	// PrivateKeyFile holds the App's private key when github.app.private_key is empty.
	PrivateKeyFile   string            `yaml:"private_key_file"`
	TriggerLabel     string            `yaml:"trigger_label"`
	Workflow         string            `yaml:"workflow"`
	TokenPermissions map[string]string `yaml:"token_permissions"`
	OIDCIssuer       string            `yaml:"oidc_issuer"`
	// RunTokenKey signs run tokens: hex or base64 of at least 32 bytes. Replicas must
	// share it.
	RunTokenKey string `yaml:"run_token_key"`
	// PreviousRunTokenKeys still verify run tokens and status records during a key
	// rotation; nothing is signed with them.
	PreviousRunTokenKeys []string `yaml:"previous_run_token_keys"`
	// ApproveWindow is how long after an edit of the issue a bare /approve is refused.
	ApproveWindow time.Duration `yaml:"approve_window"`
	// AttestationKeyFile holds serve's attestation key (Ed25519, PKCS#8 PEM, mode 0600:
	// docs/attestation.md): with it serve signs each run's statement. Empty: serve
	// attests nothing.
	AttestationKeyFile string `yaml:"attestation_key_file"`
	// PreviousAttestationKeysFile holds public keys (PEM) serve still publishes after a
	// rotation, so bundles signed before it verify against what serve publishes.
	PreviousAttestationKeysFile string `yaml:"previous_attestation_keys_file"`
	// Limits cap what all of Bumper's runs spend per UTC day (docs/usage.md#budgets).
	Limits LimitsConfig `yaml:"limits"`
	// Paused is the kill switch: nothing is dispatched, token exchanges are refused,
	// and runs in flight stop at their next poll (or finish, with Pause "finish").
	// `bumper serve` reads it again on SIGHUP (docs/operating.md#pausing-everything).
	Paused bool `yaml:"paused"`
	// Pause is what a pause does to runs in flight: "stop" (the default) or "finish".
	Pause string `yaml:"pause"`
}

// PauseState is the configuration's kill switch as the work items read it.
func (b BumperConfig) PauseState() workitem.PauseState {
	return workitem.PauseState{Paused: b.Paused, Finish: b.Pause == "finish"}
}

// LimitsConfig is serve's caps above the run; zero turns a cap off.
type LimitsConfig struct {
	// RepoDailyUSD and InstallationDailyUSD cap the model spending of one repository's,
	// and one installation's, runs per UTC day; RepoDailyItems how many work items may
	// start in a repository per day.
	RepoDailyUSD         float64 `yaml:"repo_daily_usd"`
	InstallationDailyUSD float64 `yaml:"installation_daily_usd"`
	RepoDailyItems       int     `yaml:"repo_daily_items"`
	// LedgerRepository is the repository, in each installation's account, that holds
	// the installation's day counters (default .github); the App must be installed on
	// it when installation_daily_usd is set.
	LedgerRepository string `yaml:"ledger_repository"`
}

// maxDailyUSD bounds the daily caps, as repoconfig bounds a run's.
const maxDailyUSD = 10_000_000

// workitemLimits is the config's limits as the work items count them.
func (l LimitsConfig) workitemLimits() workitem.Limits {
	return workitem.Limits{RepoDailyMicroUSD: int64(math.Round(l.RepoDailyUSD * 1e6)),
		InstallationDailyMicroUSD: int64(math.Round(l.InstallationDailyUSD * 1e6)), RepoDailyItems: l.RepoDailyItems}
}

// LogConfig sets the log level and format.
type LogConfig struct {
	Level string `yaml:"level"`
	Text  bool   `yaml:"text"`
}

// DefaultTokenPermissions are what a run's installation token may do.
func DefaultTokenPermissions() map[string]string {
	return map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write"}
}

// allowedTokenPermissions are the permissions a run token may be given at all: never
// administration, secrets, workflows or actions.
var allowedTokenPermissions = map[string]bool{"contents": true, "pull_requests": true, "issues": true,
	"checks": true, "statuses": true, "metadata": true}

// DefaultConfig is the configuration before the file and the environment apply.
func DefaultConfig() Config {
	var c Config
	c.GitHub.WebURL = "https://github.com"
	c.GitHub.V3APIURL = "https://api.github.com/"
	c.GitHub.V4APIURL = "https://api.github.com/graphql"
	c.Server = ServerConfig{Address: "127.0.0.1:8080", WebhookPath: "/api/github/hook", Workers: 8,
		QueueSize: 256, ShutdownTimeout: 30 * time.Second, RedeliverInterval: 5 * time.Minute,
		RedeliverWindow: 3 * time.Hour, DispatchGrace: 2 * time.Minute}
	c.Bumper = BumperConfig{TriggerLabel: "agent:implement", Workflow: "bumper-run.yml",
		TokenPermissions: DefaultTokenPermissions(), OIDCIssuer: "https://token.actions.githubusercontent.com",
		ApproveWindow: workitem.DefaultApproveWindow}
	c.Log = LogConfig{Level: "info"}
	return c
}

// LoadConfig reads the file strictly (unknown keys are errors), applies the environment
// overrides and checks the result. A relative bumper.private_key_file in the file is
// relative to the file's directory, so the directory `bumper setup` wrote works
// wherever it is copied and whatever directory serve starts in.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("failed to read the configuration: %w", err)
	}
	return parseConfig(raw, os.LookupEnv, filepath.Dir(path), false)
}

// LoadConfigForReading is LoadConfig for commands that only read GitHub as the App
// (`bumper report`): a configuration without bumper.run_token_key is accepted, and
// whoever reads it then says that status records could not be verified.
func LoadConfigForReading(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("failed to read the configuration: %w", err)
	}
	return parseConfig(raw, os.LookupEnv, filepath.Dir(path), true)
}

// ParseConfig is LoadConfig on bytes, with the environment given as a lookup function;
// a relative bumper.private_key_file is relative to the working directory.
func ParseConfig(raw []byte, env func(string) (string, bool)) (Config, error) {
	return parseConfig(raw, env, "", false)
}

// parseConfig is ParseConfig with the directory a relative private_key_file in raw is
// relative to ("": the working directory).
func parseConfig(raw []byte, env func(string) (string, bool), dir string, keyOptional bool) (Config, error) {
	c := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("failed to parse the configuration: %w", err)
	}
	// Before the environment: BUMPER_PRIVATE_KEY_FILE is not in the file, so a relative
	// one stays relative to the working directory.
	for _, f := range []*string{&c.Bumper.PrivateKeyFile, &c.Bumper.AttestationKeyFile, &c.Bumper.PreviousAttestationKeysFile} {
		if dir != "" && *f != "" && !filepath.IsAbs(*f) {
			*f = filepath.Join(dir, *f)
		}
	}
	c.applyEnv(env)
	if c.GitHub.App.PrivateKey == "" && c.Bumper.PrivateKeyFile != "" {
		key, err := os.ReadFile(c.Bumper.PrivateKeyFile)
		if err != nil {
			return Config{}, fmt.Errorf("failed to read bumper.private_key_file: %w", err)
		}
		c.GitHub.App.PrivateKey = string(key)
	}
	// A secret that came through a file keeps the file's final newline: setup's
	// webhook-secret put into a Kubernetes Secret with --from-file and handed over as an
	// environment variable, a YAML block scalar. GitHub signs with the secret without it,
	// so a kept newline fails every delivery; no secret Bumper makes has surrounding space.
	// (The private key needs nothing: PEM decoding skips what surrounds the block.)
	c.GitHub.App.WebhookSecret = strings.TrimSpace(c.GitHub.App.WebhookSecret)
	c.Bumper.RunTokenKey = strings.TrimSpace(c.Bumper.RunTokenKey)
	for i, k := range c.Bumper.PreviousRunTokenKeys {
		c.Bumper.PreviousRunTokenKeys[i] = strings.TrimSpace(k)
	}
	if err := c.validate(keyOptional && c.Bumper.RunTokenKey == ""); err != nil {
		return Config{}, err
	}
	return c, nil
}

func (c *Config) applyEnv(env func(string) (string, bool)) {
	// Surrounding space is never meant (an address, a URL, a level, a secret read from a
	// Kubernetes Secret's file with its newline): it is dropped.
	str := func(name string, dst *string) {
		if v, ok := env(EnvPrefix + name); ok {
			*dst = strings.TrimSpace(v)
		}
	}
	str("GITHUB_WEB_URL", &c.GitHub.WebURL)
	str("GITHUB_V3_API_URL", &c.GitHub.V3APIURL)
	str("GITHUB_V4_API_URL", &c.GitHub.V4APIURL)
	str("GITHUB_APP_WEBHOOK_SECRET", &c.GitHub.App.WebhookSecret)
	str("GITHUB_APP_PRIVATE_KEY", &c.GitHub.App.PrivateKey)
	if v, ok := env(EnvPrefix + "GITHUB_APP_INTEGRATION_ID"); ok {
		var id int64
		if _, err := fmt.Sscan(v, &id); err == nil {
			c.GitHub.App.IntegrationID = id
		} else {
			c.GitHub.App.IntegrationID = -1 // reported by Validate
		}
	}
	str("ADDRESS", &c.Server.Address)
	str("METRICS_ADDRESS", &c.Server.MetricsAddress)
	str("OIDC_ISSUER", &c.Bumper.OIDCIssuer)
	str("RUN_TOKEN_KEY", &c.Bumper.RunTokenKey)
	str("PRIVATE_KEY_FILE", &c.Bumper.PrivateKeyFile)
	str("ATTESTATION_KEY_FILE", &c.Bumper.AttestationKeyFile)
	str("LOG_LEVEL", &c.Log.Level)
}

// Validate checks the configuration and says what to fix.
func (c *Config) Validate() error { return c.validate(false) }

// validate is Validate; noKey accepts a configuration without bumper.run_token_key.
func (c *Config) validate(noKey bool) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p := c.Bumper.Pause; p != "" && p != "stop" && p != "finish" {
		bad("bumper.pause is %q; use stop (runs in flight stop at their next poll) or finish (they end on their own)", p)
	}
	for _, d := range []struct {
		key string
		usd float64
	}{{"repo_daily_usd", c.Bumper.Limits.RepoDailyUSD}, {"installation_daily_usd", c.Bumper.Limits.InstallationDailyUSD}} {
		if math.IsNaN(d.usd) || d.usd < 0 || d.usd > maxDailyUSD {
			bad("bumper.limits.%s is %v; use dollars from 0 (no cap) to %d", d.key, d.usd, maxDailyUSD)
		}
	}
	if c.Bumper.Limits.RepoDailyItems < 0 {
		bad("bumper.limits.repo_daily_items is %d; use 0 (no cap) or more", c.Bumper.Limits.RepoDailyItems)
	}
	if r := c.Bumper.Limits.LedgerRepository; r != "" && !repoconfig.ValidRepoName(r) {
		bad("bumper.limits.ledger_repository %q: name a repository of the installation's account, e.g. .github (no owner)", r)
	}
	if c.GitHub.App.IntegrationID <= 0 {
		bad("github.app.integration_id must be the App's ID (a positive number)")
	}
	if c.GitHub.App.WebhookSecret == "" {
		bad("github.app.webhook_secret is required: webhooks are only accepted when signed")
	}
	if !strings.Contains(c.GitHub.App.PrivateKey, "PRIVATE KEY") {
		bad("the App's private key is missing: set github.app.private_key (PEM) or bumper.private_key_file")
	}
	if u, err := url.Parse(c.GitHub.V3APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		bad("github.v3_api_url %q must be an https:// URL (http:// for an emulator), such as https://api.github.com/", c.GitHub.V3APIURL)
	} else if !strings.HasSuffix(c.GitHub.V3APIURL, "/") {
		bad("github.v3_api_url %q must end with '/'", c.GitHub.V3APIURL)
	}
	if c.Server.Address == "" || !strings.HasPrefix(c.Server.WebhookPath, "/") {
		bad("server.address and server.webhook_path (starting with '/') are required")
	}
	if c.Server.MetricsAddress != "" && c.Server.MetricsAddress == c.Server.Address {
		bad("server.metrics_address is server.address (%s); leave it empty to serve /metrics there", c.Server.Address)
	}
	if c.Server.Workers < 1 || c.Server.QueueSize < 0 {
		bad("server.workers must be 1 or more and server.queue_size 0 or more")
	}
	if c.Server.RedeliverInterval < 0 {
		bad("server.redeliver_interval is %s; use 0 (off) or a positive duration such as 5m", c.Server.RedeliverInterval)
	}
	if c.Server.RedeliverInterval > 0 && (c.Server.RedeliverWindow < c.Server.RedeliverInterval || c.Server.RedeliverWindow > maxRedeliverWindow) {
		bad("server.redeliver_window is %s; use at least server.redeliver_interval (%s) and at most %s (GitHub keeps deliveries 3 days)",
			c.Server.RedeliverWindow, c.Server.RedeliverInterval, maxRedeliverWindow)
	}
	if c.Server.DispatchGrace < 10*time.Second {
		// Shorter, and a slow but live replica's dispatch could be re-driven too (the
		// exchange ref still lets only one run have credentials).
		bad("server.dispatch_grace is %s; use at least 10s (default 2m)", c.Server.DispatchGrace)
	}
	if c.Bumper.Workflow == "" || strings.Contains(c.Bumper.Workflow, "/") {
		bad("bumper.workflow %q must be a file name under .github/workflows", c.Bumper.Workflow)
	}
	if c.Bumper.TriggerLabel == "" {
		bad("bumper.trigger_label is required")
	}
	if c.Bumper.OIDCIssuer == "" {
		bad("bumper.oidc_issuer is required")
	}
	if len(c.Bumper.TokenPermissions) == 0 {
		bad("bumper.token_permissions must name at least one permission")
	}
	for k, v := range c.Bumper.TokenPermissions {
		if !allowedTokenPermissions[k] {
			bad("bumper.token_permissions: %q may not be given to a run (allowed: contents, pull_requests, issues, checks, statuses, metadata)", k)
		}
		if v != "read" && v != "write" {
			bad("bumper.token_permissions.%s is %q; use read or write", k, v)
		}
	}
	if _, err := c.RunTokenKeyBytes(); err != nil && !noKey {
		bad("bumper.run_token_key: %v", err)
	}
	for i, k := range c.Bumper.PreviousRunTokenKeys {
		if _, err := decodeKey(k); err != nil {
			bad("bumper.previous_run_token_keys[%d]: %v", i, err)
		}
	}
	if c.Bumper.ApproveWindow < 0 {
		bad("bumper.approve_window is %s; use 0 (off) or a positive duration such as 10m", c.Bumper.ApproveWindow)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		bad("log.level: %v", err)
	}
	return errors.Join(errs...)
}

// RunTokenKeyBytes decodes the run token key (hex, else base64).
func (c *Config) RunTokenKeyBytes() ([]byte, error) { return decodeKey(c.Bumper.RunTokenKey) }

// PreviousKeyBytes decodes the keys being rotated out.
func (c *Config) PreviousKeyBytes() ([][]byte, error) {
	var out [][]byte
	for i, k := range c.Bumper.PreviousRunTokenKeys {
		key, err := decodeKey(k)
		if err != nil {
			return nil, fmt.Errorf("bumper.previous_run_token_keys[%d]: %w", i, err)
		}
		out = append(out, key)
	}
	return out, nil
}

// decodeKey decodes a secret key given as hex, else base64.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("required: at least 32 random bytes, hex or base64 (openssl rand -hex 32); set it in the file or BUMPER_RUN_TOKEN_KEY")
	}
	key, err := hex.DecodeString(s)
	if err != nil {
		if key, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, errors.New("not hex or base64")
		}
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("%d bytes; use at least 32", len(key))
	}
	return key, nil
}

func parseLevel(s string) (zerolog.Level, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(s))
	if err != nil || s == "" {
		return zerolog.InfoLevel, fmt.Errorf("unknown level %q; use debug, info, warn or error", s)
	}
	return lvl, nil
}

// Logger builds the process logger the configuration asks for.
func (c *Config) Logger(w io.Writer) zerolog.Logger {
	lvl, _ := parseLevel(c.Log.Level)
	if c.Log.Text {
		return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true}).Level(lvl).With().Timestamp().Logger()
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}
