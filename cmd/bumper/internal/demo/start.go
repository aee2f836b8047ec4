package demo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/scriptedmodel"
)

// startEmulator starts the GitHub emulator with the repository, its local runner
// running `bumper run` for each dispatched run, and reserves serve's address (the
// runner's environment names it).
func (d *demo) startEmulator(ctx context.Context, user *userRepo) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("failed to listen for serve on loopback: %w", err)
	}
	d.serveLn = ln
	d.serveURL = "http://" + ln.Addr().String()
	env, err := d.runnerEnv()
	if err != nil {
		return "", err
	}
	var seed *ghemu.Seed
	if user != nil {
		seed = user.seed()
	} else {
		files, err := sampleFiles()
		if err != nil {
			return "", err
		}
		if files[policyPath], err = agentPolicy(files[policyPath], d.cfg.Agent, d.cfg.AgentCmd, d.cfg.ModelBaseURL == ""); err != nil {
			return "", err
		}
		seed = sampleSeed(files)
	}
	logf, err := d.logFile("emulator.log")
	if err != nil {
		return "", err
	}
	out := filepath.Join(d.work, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("failed to create the runs' output directory: %w", err)
	}
	d.runsOut = out
	runner := &ghemu.Runner{
		// As the action's step would: each run's files in a directory of its own, which
		// outlives the job's temporary directory, for the demo to copy.
		Command: []string{"sh", "-c", `INPUT_OUT="$0/$GITHUB_RUN_ID" exec "$1" run`, out, d.cfg.Binary},
		WorkDir: filepath.Join(d.work, "runner"),
		Timeout: d.cfg.RunTimeout,
		Env:     env,
	}
	e, err := ghemu.New(ghemu.Options{StateDir: filepath.Join(d.work, "emulator"), Seed: seed, Runner: runner,
		Logger: zerolog.New(logf).With().Timestamp().Logger()})
	if err != nil {
		return "", fmt.Errorf("failed to create the emulator: %w", err)
	}
	d.closers = append(d.closers, func() { _ = e.Close() })
	if err := e.Start(ctx, d.cfg.Listen); err != nil {
		return "", err
	}
	d.e = e
	if user != nil {
		if err := user.push(ctx, e, d.work); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s with %s/%s (a maintainer with write permission, a reader with read)", e.BaseURL(), d.owner, d.repo), nil
}

// runnerEnv is the runner host's settings for `bumper run`: serve's address, the image
// cache, TCG allowed (this may be a machine without KVM), and the model API when the
// agent is a CLI. The key goes to the runner's environment only: `bumper run` hands it
// to the firewall and takes it out of its own environment before QEMU starts.
func (d *demo) runnerEnv() ([]string, error) {
	env := []string{"INPUT_URL=" + d.serveURL, "INPUT_CACHE=" + d.cfg.Cache, "INPUT_ALLOW_TCG=true", "INPUT_MEMORY=1G", "INPUT_CPUS=2"}
	agent := d.cfg.Agent
	if d.cfg.RepoDir != "" {
		agent = d.userHarness
	}
	// A model key in the user's environment reaches a run only when the user asked for
	// that model (--model-base-url): the runner would otherwise inherit it.
	for _, a := range []string{AgentClaudeCode, AgentCodex} {
		if d.cfg.ModelBaseURL == "" || a != agent {
			env = append(env, keyVar(a)+"=")
		}
	}
	switch {
	case d.cfg.ModelBaseURL != "":
		env = append(env, baseVar(agent)+"="+d.cfg.ModelBaseURL)
	case agent == AgentClaudeCode || agent == AgentCodex:
		key := "sk-demo-" + randomHex(16)
		m, err := scriptedmodel.Start(modelScript(), scriptedmodel.Options{Key: key})
		if err != nil {
			return nil, err
		}
		d.model = m
		d.closers = append(d.closers, func() { _ = m.Close() })
		env = setEnv(env, baseVar(agent), m.URL())
		env = setEnv(env, keyVar(agent), key)
	}
	return env, nil
}

// setEnv sets key to value in env, replacing an entry it has.
func setEnv(env []string, key, value string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			env[i] = key + "=" + value
			return env
		}
	}
	return append(env, key+"="+value)
}

// startServe starts the App on the reserved address, pointed at the emulator, and has
// the emulator deliver the App's webhooks to it.
func (d *demo) startServe(ctx context.Context) (string, error) {
	logf, err := d.logFile("serve.log")
	if err != nil {
		return "", err
	}
	cfg := app.DefaultConfig()
	cfg.GitHub.WebURL = d.e.BaseURL()
	cfg.GitHub.V3APIURL = d.e.BaseURL() + "/"
	cfg.GitHub.App.IntegrationID = d.e.AppID()
	cfg.GitHub.App.PrivateKey = string(d.e.AppKeyPEM())
	cfg.GitHub.App.WebhookSecret = d.e.WebhookSecret()
	cfg.Bumper.OIDCIssuer = d.e.OIDCIssuerURL()
	cfg.Bumper.RunTokenKey = randomHex(32)
	if cfg.Bumper.AttestationKeyFile, err = d.attestationKey(); err != nil {
		return "", err
	}
	cfg.Server.Address = d.serveLn.Addr().String()
	d.sctx = zerolog.New(logf).Level(zerolog.InfoLevel).With().Timestamp().Logger().WithContext(ctx)
	srv, err := app.New(d.sctx, cfg, app.Options{})
	if err != nil {
		return "", fmt.Errorf("failed to start serve: %w", err)
	}
	d.srv = srv
	// The emulator learns serve's address only now, so no webhook arrives before serve
	// can take it.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(d.serveLn) }()
	d.closers = append(d.closers, func() { _ = hs.Close() })
	d.e.SetWebhookURL(d.serveURL + cfg.Server.WebhookPath)
	if _, err := srv.Rebuild(d.sctx); err != nil {
		return "", fmt.Errorf("serve failed to read the work items from GitHub: %w", err)
	}
	return d.serveURL + " (webhooks at " + cfg.Server.WebhookPath + ")", nil
}

// attestationKey makes serve's attestation key in the demo's working directory (0600, as
// serve wants it) and writes its public key to Out, for `bumper evidence verify --key`.
func (d *demo) attestationKey() (string, error) {
	key, err := attest.GenerateKey()
	if err != nil {
		return "", err
	}
	s, err := attest.NewSigner(key)
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.work, "attestation-key.pem")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		return "", fmt.Errorf("failed to write serve's attestation key: %w", err)
	}
	pub := filepath.Join(d.cfg.Out, attestationPublicKey)
	if err := os.WriteFile(pub, attest.EncodePublicKeys([]attest.PublicKey{s.PublicKey()}), 0o644); err != nil {
		return "", fmt.Errorf("failed to write serve's attestation public key: %w", err)
	}
	return path, nil
}

// close stops everything the demo started, last first.
func (d *demo) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}
