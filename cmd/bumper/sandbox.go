package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
)

func runSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return subcommand(ctx, args, stdout, stderr, "run", "bumper sandbox run [flags] -- COMMAND [ARG]...", runSandboxRun)
}

// subcommand runs a command that has one subcommand, name (`bumper sandbox run`,
// `bumper env build`): its help for -h, help or --help, a usage error naming usage for
// anything else.
func subcommand(ctx context.Context, args []string, stdout, stderr io.Writer, name, usage string,
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) error {
	if len(args) == 0 || args[0] != name {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return run(ctx, []string{"-h"}, stdout, stderr)
		}
		return fmt.Errorf("%w: want '%s'", errUsage, usage)
	}
	return run(ctx, args[1:], stdout, stderr)
}

// sandboxRunFlags are `bumper sandbox run`'s flags, parsed and checked.
type sandboxRunFlags struct {
	imageDir, envID, cache, ws, out, memory, disk, audit, accel, qemuUser string
	caFiles, allow, resolve                                               stringList
	timeout                                                               time.Duration
	cpus                                                                  int
	cold, verbose                                                         bool
	argv                                                                  []string
	memMB, diskMB                                                         int
}

// parseSandboxRun reads the flags and checks what can be checked before anything is
// read from disk.
func parseSandboxRun(args []string, stderr io.Writer) (*sandboxRunFlags, error) {
	f := &sandboxRunFlags{}
	fs := newFlagSet("sandbox run", "[--image DIR | --env ID] [--allow DOMAIN]... [--resolve HOST:IP]... [--ca-file FILE]... [--workspace DIR] [--out DIR] [--timeout D] [--cpus N] [--memory SIZE] [--audit FILE] [--cold] -- COMMAND [ARG]...", stderr)
	fs.StringVar(&f.imageDir, "image", "", "image directory (default: build or reuse the default image in --cache)")
	fs.StringVar(&f.envID, "env", "", "boot the image of an environment built by bumper env build DIR: the `ID` it printed (sha256:<64 hex>), or a unique prefix of at least 12 hex digits, looked up in --cache")
	fs.StringVar(&f.cache, "cache", image.DefaultCacheDir, "image cache: the default image (without --image), environments' images (--env), and warm-start snapshots")
	fs.Var(&f.caFiles, "ca-file", "PEM file of CA certificates the default image's guest trusts besides Debian's (repeatable): a network that inspects TLS")
	fs.Var(&f.allow, "allow", "let the command reach DOMAIN through the firewall proxy (repeatable); without any, the VM has no network")
	fs.Var(&f.resolve, "resolve", "pin HOST to IP in the proxy's resolver (repeatable)")
	fs.StringVar(&f.ws, "workspace", "", "directory copied into the VM as /workspace")
	fs.StringVar(&f.out, "out", "", "directory that receives the VM's /out")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "wall-time limit; the VM is killed when it passes")
	fs.IntVar(&f.cpus, "cpus", 2, "vCPUs")
	fs.StringVar(&f.memory, "memory", "1G", "guest memory (e.g. 512M, 2G)")
	fs.StringVar(&f.disk, "disk", "", "root disk size, at least the image's; the guest's root filesystem grows to it (default: the image's)")
	fs.StringVar(&f.audit, "audit", "", "firewall audit log (default: a file in the temp directory, printed at the end)")
	fs.BoolVar(&f.cold, "cold", false, "boot cold instead of restoring a snapshot from CACHE/snapshots (the first warm run of an image makes the snapshot)")
	fs.StringVar(&f.accel, "accel", sandbox.AccelAuto, "accelerator: auto (KVM if a canary boot works, else TCG), kvm or tcg")
	fs.StringVar(&f.qemuUser, "qemu-user", defaultQEMUUser(), "user (name or uid[:gid]) QEMU drops to; a dedicated system user is best")
	fs.BoolVar(&f.verbose, "v", false, "log boot steps to stderr")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if f.envID != "" {
		if f.imageDir != "" {
			return nil, fmt.Errorf("%w: --env and --image both name the image to boot: give one", errUsage)
		}
		// Checked before anything is read: an ID that is not one (a path, say) goes no further.
		if _, err := image.ParseKeyPrefix(f.envID); err != nil {
			return nil, fmt.Errorf("%w: --env %q is not an environment id: want the sha256:<64 hex> bumper env build printed, or its first 12 or more hex digits", errUsage, f.envID)
		}
	}
	if f.argv = fs.Args(); len(f.argv) == 0 {
		return nil, fmt.Errorf("%w: no command: put it after --, e.g. bumper sandbox run -- git --version", errUsage)
	}
	var err error
	if f.memMB, err = sandbox.ParseSize(f.memory); err != nil {
		return nil, fmt.Errorf("%w: --memory: %w", errUsage, err)
	}
	if f.disk != "" {
		if f.diskMB, err = sandbox.ParseSize(f.disk); err != nil {
			return nil, fmt.Errorf("%w: --disk: %w", errUsage, err)
		}
	}
	if len(f.resolve) > 0 && len(f.allow) == 0 {
		return nil, fmt.Errorf("%w: --resolve without --allow does nothing: the VM has no network unless something is allowed", errUsage)
	}
	return f, nil
}

// spec is the sandbox run the flags describe, on im; it names the audit log the
// firewall writes when anything is allowed.
func (f *sandboxRunFlags) spec(im *image.Image, stdout, stderr io.Writer) (sandbox.Spec, string) {
	m := im.Manifest()
	spec := sandbox.Spec{
		Config: sandbox.Config{
			Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: m.Cmdline,
			CPUs: f.cpus, MemoryMB: f.memMB, DiskSizeMB: f.diskMB, Timeout: f.timeout, WorkspaceDir: f.ws, Accel: f.accel,
			QEMUUser: f.qemuUser,
		},
		Argv: f.argv, OutDir: f.out, Stdout: stdout, Stderr: stderr,
	}
	if !f.cold {
		spec.Config.SnapshotDir = sandbox.SnapshotsDir(f.cache)
	}
	auditPath := f.audit
	if len(f.allow) > 0 {
		if auditPath == "" {
			auditPath = filepath.Join(os.TempDir(), fmt.Sprintf("bumper-sandbox-audit-%d.jsonl", time.Now().UnixNano()))
		}
		spec.StartProxy = firewallStarter(firewallFlags{Audit: auditPath, Allow: f.allow, Resolve: f.resolve})
	}
	return spec, auditPath
}

func runSandboxRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseSandboxRun(args, stderr)
	if err != nil {
		return err
	}
	level := zerolog.WarnLevel
	if f.verbose {
		level = zerolog.InfoLevel
	}
	ctx = zerolog.New(stderr).Level(level).With().Timestamp().Logger().WithContext(ctx)
	var im *image.Image
	if f.envID != "" {
		im, err = environmentImage(f.cache, f.envID)
	} else {
		im, err = loadOrBuildImage(ctx, f.imageDir, f.cache, f.caFiles, stderr)
	}
	if err != nil {
		return err
	}
	spec, auditPath := f.spec(im, stdout, stderr)
	rep, err := sandbox.Run(ctx, spec)
	f.reportBoot(rep, auditPath, stderr)
	autoPrune(f.cache, stderr)
	if err != nil {
		return withColdHint(err)
	}
	return sandboxRunResult(rep, stderr)
}

// reportBoot says how the VM started (with -v), where the audit log is, and what became
// of the warm start.
func (f *sandboxRunFlags) reportBoot(rep *sandbox.Report, auditPath string, stderr io.Writer) {
	if rep != nil && f.verbose {
		fmt.Fprintf(stderr, "sandbox: accel %s (%s); %s boot (%s); command sent after %v, first output after %v; teardown %v\n",
			rep.Accel.Accel, rep.Accel.Reason, rep.Boot.Mode, rep.Boot.Reason,
			rep.Ready.Round(time.Millisecond), rep.FirstOutput.Round(time.Millisecond), rep.Teardown.Round(time.Millisecond))
	}
	if len(f.allow) > 0 {
		fmt.Fprintf(stderr, "sandbox: firewall audit log: %s\n", auditPath)
	}
	if rep == nil || f.cold {
		return
	}
	switch {
	case rep.SnapshotBroken != "":
		fmt.Fprintf(stderr, "sandbox: warm start failed, booted cold: %s\n", rep.SnapshotBroken)
	case rep.SnapshotMade:
		fmt.Fprintln(stderr, "sandbox: first run of this image and VM shape: made a snapshot, later runs start warm")
	case rep.Boot.Mode == sandbox.BootCold:
		fmt.Fprintf(stderr, "sandbox: booted cold: %s\n", rep.Boot.Reason)
	}
}

// sandboxRunResult is the command's outcome as bumper's own: its exit status, 124 on a
// timeout, 137 when a signal killed it.
func sandboxRunResult(rep *sandbox.Report, stderr io.Writer) error {
	if rep.Out != nil && rep.Out.SkippedCount > 0 {
		fmt.Fprintf(stderr, "sandbox: %d entries of /out refused:\n", rep.Out.SkippedCount)
		for _, s := range rep.Out.Skipped {
			fmt.Fprintf(stderr, "  %s\n", s)
		}
		if more := rep.Out.SkippedCount - len(rep.Out.Skipped); more > 0 {
			fmt.Fprintf(stderr, "  … and %d more\n", more)
		}
	}
	switch {
	case rep.TimedOut:
		fmt.Fprintf(stderr, "sandbox: %s\n", rep.Error)
		return exitError{code: 124}
	case rep.Error != "":
		return fmt.Errorf("the command did not run: %s", rep.Error)
	case rep.OutError != "":
		fmt.Fprintf(stderr, "sandbox: /out not returned: %s\n", rep.OutError)
	}
	if rep.Signal != "" {
		fmt.Fprintf(stderr, "sandbox: command killed by signal %s\n", rep.Signal)
		return exitError{code: 128 + 9}
	}
	if rep.ExitCode != 0 {
		return exitError{code: rep.ExitCode}
	}
	return nil
}

// withColdHint adds to a failed snapshot restore the flag that boots without
// snapshots; the library names only its own terms.
func withColdHint(err error) error {
	var re *sandbox.RestoreError
	if errors.As(err, &re) {
		return fmt.Errorf("%w\n(bumper sandbox run --cold boots without snapshots)", err)
	}
	return err
}

// autoPrune runs sandbox.AutoPrune and says what it did. It never fails the run:
// problems are reported and left for `bumper image prune`.
func autoPrune(cache string, stderr io.Writer) {
	removed, err := sandbox.AutoPrune(cache)
	if len(removed) > 0 {
		fmt.Fprintf(stderr, "sandbox: pruned %d cache entries unused for 30 days (%s)\n", len(removed), formatBytes(cachedir.Total(removed)))
	}
	if err != nil {
		fmt.Fprintf(stderr, "sandbox: cache pruning failed (run bumper image prune): %v\n", err)
	}
}

func loadOrBuildImage(ctx context.Context, dir, cache string, caFiles []string, stderr io.Writer) (*image.Image, error) {
	if dir != "" {
		return image.Load(dir)
	}
	bc, err := defaultBuildConfig(cache, caFiles, stderr)
	if err != nil {
		return nil, err
	}
	return image.Build(ctx, bc)
}

// defaultBuildConfig builds the default image in cache with this binary as the guest
// agent, trusting caFiles besides Debian's CAs, with harnesses from BUMPER_NPM_REGISTRY
// (default the public registry): the image commands that start VMs use
// it when given none.
func defaultBuildConfig(cache string, caFiles []string, progress io.Writer) (image.BuildConfig, error) {
	self, err := os.Executable()
	if err != nil {
		return image.BuildConfig{}, fmt.Errorf("failed to find this binary to use as the guest agent: %w", err)
	}
	return image.BuildConfig{CacheDir: cache, AgentBinary: self, CACerts: caFiles, NPMRegistry: os.Getenv(envNPMRegistry), Progress: progress}, nil
}

// environmentImage finds the image `bumper env build` derived for the environment id
// (in full or a prefix) in cache. The library's errors name its own terms; this adds the
// commands that fix them.
func environmentImage(cache, id string) (*image.Image, error) {
	imagesDir := image.ImagesDir(cache)
	im, err := image.FindDerivedPrefix(imagesDir, id)
	var amb *image.AmbiguousKeyError
	switch {
	case errors.Is(err, image.ErrNoDerived):
		return nil, fmt.Errorf("no environment with id %s is in the cache %s: %w\n"+
			"(run bumper env build DIR first, with the same --cache; an environment without a setup has no image of its own: "+
			"boot the image env build printed with --image)", id, cache, err)
	case errors.As(err, &amb):
		return nil, fmt.Errorf("the environment id %s is ambiguous: %w", id, err)
	case err != nil:
		return nil, fmt.Errorf("failed to get the environment's image: %w", err)
	}
	return im, nil
}

// firewallStarter wires the firewall into the sandbox: the sandbox calls it with the
// run's host-side address once the network exists, and calls the function it returns
// to stop the firewall when the run ends.
func firewallStarter(f firewallFlags) sandbox.ProxyStarter {
	return func(ctx context.Context, listen string) (func() error, error) {
		f.Listen = listen
		var cfg firewall.Config
		if err := f.apply(&cfg); err != nil {
			return nil, err
		}
		fw, err := firewall.New(&cfg)
		if err != nil {
			return nil, err
		}
		if err := fw.Start(ctx); err != nil {
			return nil, err
		}
		return func() error { return fw.Stop(context.Background()) }, nil
	}
}

// defaultQEMUUser is the user QEMU drops to by default: nobody when running as root (a
// dedicated system user is better), else no change.
func defaultQEMUUser() string {
	if os.Geteuid() == 0 {
		return "nobody"
	}
	return ""
}
