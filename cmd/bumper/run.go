package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/ghaction"
	"github.com/bumperdev/bumper/action/preflight"
	"github.com/bumperdev/bumper/action/runner"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/slots"
)

// Environment of `bumper run` beyond the action's inputs: the model APIs' keys (the
// workflow passes them from secrets; only the firewall ever holds them) and, for tests
// and the demo, the APIs' addresses.
const (
	envAnthropicKey  = "ANTHROPIC_API_KEY"
	envOpenAIKey     = "OPENAI_API_KEY"
	envAnthropicBase = "BUMPER_ANTHROPIC_BASE_URL"
	envOpenAIBase    = "BUMPER_OPENAI_BASE_URL"
	envCAFile        = "BUMPER_CA_FILE"
	// envResolve pins names to addresses in the run's firewalls (HOST:IP, separated by
	// commas or spaces): the runner host's registry mirrors on private addresses.
	envResolve = "BUMPER_FIREWALL_RESOLVE"
	// envOSV is the OSV API the output gates' dependencies gate asks from the runner
	// host (docs/gates.md); absent: https://api.osv.dev.
	envOSV = "BUMPER_OSV_URL"

	defaultAnthropicBase = "https://api.anthropic.com"
	defaultOpenAIBase    = "https://api.openai.com"
)

// runRun is `bumper run`: one dispatched run of the runner workflow, from its inputs
// (INPUT_*) and the Actions environment, as action.yml starts it.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "(no flags: inputs come from INPUT_* as the action passes them; see docs/action.md)", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: run takes no arguments; its inputs are INPUT_* variables (docs/action.md)", errUsage)
	}
	// Everything printed may quote the agent: no line of it may be a workflow command.
	stdout, stderr = ghaction.Defuse(stdout), ghaction.Defuse(stderr)
	env := ghaction.New(stdout, os.Getenv)
	// The keys are read once and taken out of the environment, so no process this one
	// starts (QEMU, git) inherits them.
	keys := map[string]string{}
	for _, k := range []string{envAnthropicKey, envOpenAIKey} {
		keys[k] = os.Getenv(k)
		env.AddMask(keys[k])
		_ = os.Unsetenv(k)
	}
	log := zerolog.New(stderr).With().Timestamp().Logger()
	ctx = log.WithContext(ctx)

	env.Group("Inputs and preconditions")
	in, err := env.Inputs()
	if err != nil {
		env.EndGroup()
		env.Errorf("%v", err)
		return exitError{code: 2}
	}
	actx, err := env.Context()
	if err != nil {
		env.EndGroup()
		env.Errorf("%v", err)
		return exitError{code: 2}
	}
	im, qemuVersion, accel, err := preconditions(ctx, env, in, actx, stderr)
	env.EndGroup()
	if err != nil {
		env.Errorf("%v", err)
		return exitError{code: 1}
	}

	cfg := runner.Config{
		ServeURL: in.URL, AllowInsecureHTTP: in.AllowInsecureHTTP,
		OIDCToken: func(ctx context.Context) (string, error) {
			return appclient.OIDCTokenFromEnv(ctx, wire.OIDCAudience, nil)
		},
		WorkItem: in.WorkItem, Attempt: in.Attempt, Nonce: in.Nonce, Stage: in.Stage,
		ServerURL: actx.ServerURL, APIURL: actx.APIURL, CAFile: os.Getenv(envCAFile),
		Trigger: evidence.Trigger{Event: actx.EventName, WorkflowRef: actx.WorkflowRef, Actor: actx.Actor, Runner: actx.RunnerName},
		VM: sandbox.Config{
			Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline,
			CPUs: in.CPUs, MemoryMB: in.MemoryMB(), Accel: accel, QEMUUser: in.QEMUUser,
			SnapshotDir: sandbox.SnapshotsDir(in.Cache),
		},
		ImageDigest: im.Manifest().Digest, VMM: qemuVersion,
		Out: in.Out, WorkDir: actx.RunnerTemp,
		Mask:  env.AddMask,
		Log:   stdout,
		Phase: runner.PhaseGroups(env, stdout),
	}
	if in.Image == "" {
		// The runner builds its own images, so it can build a repository's environment.
		if cfg.Environments, err = defaultBuildConfig(in.Cache, caFiles(), stderr); err != nil {
			env.Errorf("%v", err)
			return exitError{code: 1}
		}
	}
	if cfg.Resolve, err = resolvePins(strings.FieldsFunc(os.Getenv(envResolve), func(r rune) bool { return r == ',' || r == ' ' })); err != nil {
		env.Errorf("%s: %v", envResolve, err)
		return exitError{code: 2}
	}
	if cfg.Credentials, err = loadCredentials(); err != nil {
		env.Errorf("%v", err)
		return exitError{code: 2}
	}
	if cfg.OSVURL = os.Getenv(envOSV); cfg.OSVURL != "" {
		if u, err := url.Parse(cfg.OSVURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			env.Errorf("%s: %q is not an http(s) URL; set it to OSV's API base, e.g. https://api.osv.dev", envOSV, cfg.OSVURL)
			return exitError{code: 2}
		}
	}
	if cfg.Slots, err = vmSlots(os.Getenv); err != nil {
		env.Errorf("%v", err)
		return exitError{code: 2}
	}
	cfg.RepositoryID, _ = strconv.ParseInt(os.Getenv("GITHUB_REPOSITORY_ID"), 10, 64)
	cfg.Trigger.RunID, _ = strconv.ParseInt(actx.RunID, 10, 64)
	cfg.Trigger.RunAttempt, _ = strconv.Atoi(actx.RunAttempt)
	if k := keys[envAnthropicKey]; k != "" {
		cfg.AnthropicBase, cfg.AnthropicKey = orDefault(os.Getenv(envAnthropicBase), defaultAnthropicBase), k
	}
	if k := keys[envOpenAIKey]; k != "" {
		cfg.OpenAIBase, cfg.OpenAIKey = orDefault(os.Getenv(envOpenAIBase), defaultOpenAIBase), k
	}

	res, runErr := runner.Run(ctx, cfg)
	if res != nil {
		if err := env.SetOutputs(ghaction.Outputs{PullRequest: res.PullRequest, EvidenceDigest: res.Digest,
			CostMicroUSD: res.CostMicroUSD, Outcome: string(res.Outcome)}); err != nil {
			env.Warningf("failed to set the step's outputs: %v", err)
		}
		if err := env.AddSummary(runner.JobSummary(res, in.WorkItem, in.Attempt, ghaction.MaxSummaryBytes)); err != nil {
			env.Warningf("failed to write the job summary: %v", err)
		}
	}
	if runErr != nil {
		// An annotation is posted beside the job log, where the run's reason (which may
		// quote what the agent left) is redacted as everywhere the run publishes.
		env.Errorf("%s", evidence.RedactText(runErr.Error()))
		return exitError{code: 1}
	}
	return nil
}

// vmSlots is the runner host's VM slots, as its environment sets them
// (docs/runner-host.md, "Runs at once").
func vmSlots(getenv func(string) string) (*slots.Host, error) {
	m, err := slots.ThisMachine()
	if err != nil {
		return nil, err
	}
	lim, err := slots.FromEnv(getenv, m)
	if err != nil {
		return nil, err
	}
	return slots.New(lim)
}

// preconditions runs every preflight check at once, then loads the image and, when the
// accelerator needed the image's kernel to decide, checks it again.
func preconditions(ctx context.Context, env *ghaction.Env, in ghaction.Inputs, actx ghaction.Context, stderr io.Writer) (*image.Image, string, string, error) {
	opts := preflight.FromInputs(in, actx.RunnerTemp)
	rep := preflight.Run(ctx, opts)
	fmt.Fprint(stderr, rep.Text())
	for _, c := range rep.With(preflight.Warning) {
		env.Warningf("%s", c.String())
	}
	if err := rep.Err(); err != nil {
		return nil, "", "", err
	}
	im, err := loadOrBuildImage(ctx, in.Image, in.Cache, caFiles(), stderr)
	if err != nil {
		return nil, "", "", fmt.Errorf("failed to get the VM image: %w", err)
	}
	choice := rep.Accel
	if choice.Accel == "" {
		check, c := preflight.AccelCheck(ctx, opts, im.KernelPath())
		if check.Status == preflight.Failed {
			return nil, "", "", errors.New(check.String())
		}
		choice = c
	}
	version := ""
	for _, c := range rep.Checks {
		if c.Name == preflight.CheckQEMU {
			version = c.Detail
		}
	}
	return im, version, choice.Accel, nil
}

// caFiles is the runner host's CA bundle (BUMPER_CA_FILE), for the images it builds
// as for its gateways: a network that inspects TLS inspects the guest's connections too.
func caFiles() []string {
	if f := os.Getenv(envCAFile); f != "" {
		return []string{f}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
