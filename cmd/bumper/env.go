package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/envbuild"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
)

// runEnv is `bumper env build DIR`: a repository's environment, built (or found) from a
// local checkout, so an admin can try a setup script before any run.
func runEnv(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return subcommand(ctx, args, stdout, stderr, "build", "bumper env build [flags] DIR", runEnvBuild)
}

// repoName is a GitHub repository's owner/name.
var repoName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)

func runEnvBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("env build", "[--repo OWNER/NAME] [--resolve HOST:IP]... [--ca-file FILE]... [--cache DIR] [--audit FILE] [--accel A] [--cpus N] [--memory SIZE] [--qemu-user U] [-v] DIR", stderr)
	repo := fs.String("repo", "", "the repository (owner/name) whose runs will use the environment: gives the runner's own key, so a runner host finds what was built here")
	cache := fs.String("cache", image.DefaultCacheDir, "image cache: the base image with the environment's packages, and the environment's image")
	auditPath := fs.String("audit", "", "the setup firewall's audit log (default: a file in the temp directory, printed at the end)")
	accel := fs.String("accel", sandbox.AccelAuto, "accelerator for the setup's VM: auto, kvm or tcg")
	cpus := fs.Int("cpus", 2, "the setup VM's vCPUs")
	memory := fs.String("memory", "2G", "the setup VM's memory")
	qemuUser := fs.String("qemu-user", defaultQEMUUser(), "user QEMU drops to")
	var resolve, caFiles stringList
	fs.Var(&caFiles, "ca-file", "PEM file of CA certificates the environment's guest trusts besides Debian's (repeatable): a network that inspects TLS, as the runner host's BUMPER_CA_FILE")
	fs.Var(&resolve, "resolve", "pin HOST to IP in the setup's firewall, trusting that address (repeatable): a registry mirror on a private address")
	verbose := fs.Bool("v", false, "log steps to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: want one directory, the repository's checkout", errUsage)
	}
	dir := fs.Arg(0)
	if *repo != "" && !repoName.MatchString(*repo) {
		return fmt.Errorf("%w: --repo %q: want owner/name, as in github.com/owner/name", errUsage, *repo)
	}
	pins, err := resolvePins(resolve)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	memMB, err := sandbox.ParseSize(*memory)
	if err != nil {
		return fmt.Errorf("%w: --memory: %w", errUsage, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, repoconfig.Path))
	if err != nil {
		return fmt.Errorf("failed to read %s in %s: %w", repoconfig.Path, dir, err)
	}
	pol, err := repoconfig.Parse(raw)
	if err != nil {
		return err
	}
	if pol.Environment == nil {
		return fmt.Errorf("%s in %s has no environment: section: nothing to build (docs/usage.md, Environments)", repoconfig.Path, dir)
	}
	bc, err := defaultBuildConfig(*cache, caFiles, stderr)
	if err != nil {
		return err
	}
	if *auditPath == "" {
		*auditPath = filepath.Join(os.TempDir(), fmt.Sprintf("bumper-env-audit-%d.jsonl", time.Now().UnixNano()))
	}
	level := zerolog.WarnLevel
	if *verbose {
		level = zerolog.InfoLevel
	}
	ctx = zerolog.New(stderr).Level(level).With().Timestamp().Logger().WithContext(ctx)
	start := time.Now()
	res, err := envbuild.Build(ctx, envbuild.Options{
		RepoDir: dir, Repository: *repo, Env: *pol.Environment, Resolve: pins,
		Image: bc,
		VM:    sandbox.Config{CPUs: *cpus, MemoryMB: memMB, Accel: *accel, QEMUUser: *qemuUser},
		Audit: *auditPath, Log: stderr,
	})
	if pol.Environment.Setup != "" {
		fmt.Fprintf(stderr, "env: the setup's firewall audit log: %s\n", *auditPath)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "environment %s\n", res.Key.Digest)
	fmt.Fprintf(stdout, "image       %s\n", res.Image.Dir())
	switch {
	case res.Built:
		fmt.Fprintf(stdout, "built       in %v (setup %v)\n", time.Since(start).Round(100*time.Millisecond), res.Setup.Round(100*time.Millisecond))
	case pol.Environment.Setup == "":
		fmt.Fprintf(stdout, "packages    in the image (no setup); %v\n", time.Since(start).Round(100*time.Millisecond))
	default:
		fmt.Fprintln(stdout, "found       built before from the same inputs; nothing ran")
	}
	fmt.Fprintln(stdout, "inputs:")
	for _, in := range res.Key.Inputs {
		fmt.Fprintf(stdout, "  %s\n", in)
	}
	return nil
}
