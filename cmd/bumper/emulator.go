package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/ghemu"
)

func runEmulator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("emulator", "--listen ADDR [--state DIR] [--seed FILE] [--webhook-url URL] [--validate]", stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve the emulated GitHub on")
	stateDir := fs.String("state", "", "directory that keeps state, keys and git repositories across restarts (default: a temporary one)")
	seedFile := fs.String("seed", "", "YAML file describing accounts, repositories and installations (default: one org, one repo, a maintainer and a reader)")
	webhookURL := fs.String("webhook-url", "", "where to deliver the App's webhooks")
	webhookSecret := fs.String("webhook-secret", "", "secret to sign webhooks with (default: generated, or the one kept in --state)")
	validate := fs.Bool("validate", false, "check every request, response and webhook against GitHub's OpenAPI description and webhook schema, and log each mismatch")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	opts := ghemu.Options{StateDir: *stateDir, WebhookURL: *webhookURL, WebhookSecret: *webhookSecret,
		Logger: zerolog.New(stderr).With().Timestamp().Logger()}
	if *seedFile != "" {
		seed, err := ghemu.LoadSeed(*seedFile)
		if err != nil {
			return err
		}
		opts.Seed = seed
	}
	var checker *ghemu.Checker
	if *validate {
		var err error
		if checker, err = ghemu.NewChecker(); err != nil {
			return err
		}
		opts.WebhookCheck = checker.CheckWebhook
	}
	emu, err := ghemu.New(opts)
	if err != nil {
		return err
	}
	handler := emu.Handler()
	if checker != nil {
		handler = checker.Wrap(handler)
	}
	srv, base, err := listenAndServe(ctx, *listen, handler)
	if err != nil {
		_ = emu.Close()
		return err
	}
	emu.SetBaseURL(base)
	printEmulatorBanner(stdout, emu, base, *stateDir, checker != nil)
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	_ = emu.WaitWebhooks(shutdown)
	if checker != nil {
		ex, hooks := checker.Counts()
		m := checker.Mismatches(true)
		fmt.Fprintf(stderr, "fidelity: %d REST exchanges and %d webhooks checked, %d mismatches\n", ex, hooks, len(m))
		for _, s := range m {
			fmt.Fprintln(stderr, "  "+s)
		}
	}
	return emu.Close()
}

func printEmulatorBanner(w io.Writer, emu *ghemu.Emulator, base, stateDir string, validating bool) {
	fmt.Fprintf(w, "GitHub emulator listening\n")
	fmt.Fprintf(w, "  base URL:        %s\n", base)
	fmt.Fprintf(w, "  App ID:          %d\n", emu.AppID())
	fmt.Fprintf(w, "  App private key: %s\n", emu.AppKeyPath())
	fmt.Fprintf(w, "  webhook secret:  %s\n", emu.WebhookSecret())
	fmt.Fprintf(w, "  OIDC issuer:     %s\n", emu.OIDCIssuerURL())
	if id := emu.InstallationID(ghemu.DefaultOrg); id != 0 {
		fmt.Fprintf(w, "  installation:    %d (on %s)\n", id, ghemu.DefaultOrg)
		fmt.Fprintf(w, "  clone:           git clone %s/%s/%s.git\n", base, ghemu.DefaultOrg, ghemu.DefaultRepo)
	}
	for _, u := range emu.Users() {
		fmt.Fprintf(w, "  user %-12s token %s\n", u.Login, u.Token)
	}
	if stateDir == "" {
		fmt.Fprintf(w, "  state:           temporary (use --state DIR to keep it)\n")
	}
	if validating {
		fmt.Fprintf(w, "  validation:      on (mismatches are logged)\n")
	}
	if f, ok := w.(*os.File); ok {
		_ = f.Sync()
	}
}

// listenAndServe serves h on addr until ctx ends, returning the base URL it is
// reachable at.
func listenAndServe(ctx context.Context, addr string, h http.Handler) (*http.Server, string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("failed to listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}
