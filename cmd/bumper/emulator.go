package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/faults"
)

func runEmulator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("emulator", "--listen ADDR [--state DIR] [--seed FILE] [--webhook-url URL] [--validate] [--faults FILE] [--runner 'CMD' [--runner-workflow FILE]... [--runner-env KEY=VALUE]... [--runner-timeout D] [--runner-parallel N] [--runner-dir DIR]]", stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve the emulated GitHub on")
	stateDir := fs.String("state", "", "directory that keeps state, keys and git repositories across restarts (default: a temporary one)")
	seedFile := fs.String("seed", "", "YAML file describing accounts, repositories and installations (default: one org, one repo, a maintainer and a reader)")
	webhookURL := fs.String("webhook-url", "", "where to deliver the App's webhooks")
	webhookSecret := fs.String("webhook-secret", "", "secret to sign webhooks with (default: generated, or the one kept in --state)")
	faultsFile := fs.String("faults", "", "YAML plan of GitHub's faults to inject: per route and method, rates of 502, 503, 403 secondary rate limits and 429 with Retry-After, 422 races, added latency; dropped and duplicated webhook deliveries; a seed to replay a run (docs/emulator.md#faults)")
	validate := fs.Bool("validate", false, "check every request, response and webhook against GitHub's OpenAPI description and webhook schema, and log each mismatch")
	var rf runnerFlags
	fs.StringVar(&rf.command, "runner", "", "execute each dispatched workflow run with this shell command (sh -e -c 'CMD', in the run's workspace, with GitHub's Actions environment); default: runs stay queued")
	fs.Var(&rf.workflows, "runner-workflow", "only runs of this workflow file (name or .github/workflows/ path) go to --runner (repeatable; default: every dispatched run)")
	fs.Var(&rf.env, "runner-env", "extra KEY=VALUE in the --runner command's environment (repeatable)")
	fs.DurationVar(&rf.timeout, "runner-timeout", 0, "cap on each run's time, besides the workflow's timeout-minutes (default: that, or GitHub's 360m)")
	fs.IntVar(&rf.parallel, "runner-parallel", 1, "how many runs --runner executes at once; the others stay queued")
	fs.StringVar(&rf.dir, "runner-dir", "", "directory for the runs' logs, summaries and workspaces (default: runner/ in the state directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	opts := ghemu.Options{StateDir: *stateDir, WebhookURL: *webhookURL, WebhookSecret: *webhookSecret,
		Logger: zerolog.New(stderr).With().Timestamp().Logger()}
	runner, err := rf.runner(fs)
	if err != nil {
		return err
	}
	opts.Runner = runner
	if *seedFile != "" {
		seed, err := ghemu.LoadSeed(*seedFile)
		if err != nil {
			return err
		}
		opts.Seed = seed
	}
	if *faultsFile != "" {
		plan, err := ghemu.LoadFaults(*faultsFile)
		if err != nil {
			return err
		}
		opts.Faults = plan
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
	runnerLine := ""
	if runner != nil {
		runnerLine = fmt.Sprintf("sh -e -c %q (%s, %d at a time)", rf.command, rf.served(), runner.Parallel)
	}
	printEmulatorBanner(stdout, emu, base, *stateDir, checker != nil, runnerLine)
	if *faultsFile != "" {
		fmt.Fprintf(stdout, "  faults:          %s (seed %d)\n", *faultsFile, emu.Faults().Seed())
	}
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	_ = emu.WaitWebhooks(shutdown)
	if *faultsFile != "" {
		printFaultCounts(stderr, emu.Faults().Counts())
	}
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

// printFaultCounts says what the plan of faults injected, kind by kind.
func printFaultCounts(w io.Writer, c ghemu.FaultCounts) {
	fmt.Fprintf(w, "faults: %d injected", c.Total())
	for _, k := range faults.Kinds {
		if n := c.ByKind[k]; n > 0 {
			fmt.Fprintf(w, ", %s %d", k, n)
		}
	}
	fmt.Fprintf(w, "; %s of latency added; %d requests before their Retry-After\n", c.Delay.Round(time.Millisecond), c.EarlyRetries)
}

func printEmulatorBanner(w io.Writer, emu *ghemu.Emulator, base, stateDir string, validating bool, runner string) {
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
	if runner != "" {
		fmt.Fprintf(w, "  runner:          %s\n", runner)
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

// runnerFlags are the --runner* flags of bumper emulator.
type runnerFlags struct {
	command        string
	workflows, env stringList
	timeout        time.Duration
	parallel       int
	dir            string
}

// runner is the local runner the flags ask for, or nil without --runner. The command
// is run by sh -e, as a workflow's `run:` step with `shell: sh` is.
func (f *runnerFlags) runner(fs *flag.FlagSet) (*ghemu.Runner, error) {
	if f.command == "" {
		var stray []string
		fs.Visit(func(fl *flag.Flag) {
			if strings.HasPrefix(fl.Name, "runner-") {
				stray = append(stray, "--"+fl.Name)
			}
		})
		if len(stray) > 0 {
			return nil, fmt.Errorf("%w: %s need --runner", errUsage, strings.Join(stray, ", "))
		}
		return nil, nil
	}
	if f.parallel < 1 {
		return nil, fmt.Errorf("%w: --runner-parallel must be at least 1", errUsage)
	}
	if f.timeout < 0 {
		return nil, fmt.Errorf("%w: --runner-timeout must not be negative", errUsage)
	}
	for _, kv := range f.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("%w: --runner-env %q is not KEY=VALUE", errUsage, kv)
		}
	}
	return &ghemu.Runner{Command: []string{"sh", "-e", "-c", f.command}, Workflows: f.workflows,
		Env: f.env, Timeout: f.timeout, Parallel: f.parallel, WorkDir: f.dir}, nil
}

func (f *runnerFlags) served() string {
	if len(f.workflows) == 0 {
		return "every dispatched run"
	}
	return "runs of " + strings.Join(f.workflows, ", ")
}
