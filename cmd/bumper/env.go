package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/credentials"
	"github.com/bumperdev/bumper/action/envbuild"
	"github.com/bumperdev/bumper/firewall/credential"
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
	files, err := checkoutFiles(ctx, dir, *repo != "")
	if err != nil {
		return err
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
		return fmt.Errorf("%s in %s has no environment: section: nothing to build (docs/environments.md)", repoconfig.Path, dir)
	}
	creds, err := grantCredentials(*repo, pol.Credentials)
	if err != nil {
		return err
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
		RepoDir: dir, Files: files, Repository: *repo, Env: *pol.Environment, Resolve: pins,
		Credentials: creds, CAFile: os.Getenv(envCAFile),
		Image: bc,
		VM:    sandbox.Config{CPUs: *cpus, MemoryMB: memMB, Accel: *accel, QEMUUser: *qemuUser},
		Audit: *auditPath, Log: stderr,
	})
	if pol.Environment.Setup != "" {
		fmt.Fprintf(stderr, "env: the setup's firewall audit log: %s\n", *auditPath)
	}
	if pol.Environment.Setup != "" {
		// Success or failure, the hosts the setup was refused and the change that would
		// let them through (docs/environments.md).
		d, derr := envbuild.Denials(*auditPath, raw)
		if derr != nil {
			fmt.Fprintf(stderr, "env: %v\n", derr)
		}
		if d != nil {
			fmt.Fprint(stderr, "env: "+d.Text())
		}
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

// checkoutFiles lists what of DIR goes into the setup's workspace: in a git checkout,
// the tracked files only (an untracked .env or a token in .npmrc never reaches a VM
// whose allowlist the repository chose); nil for a plain directory, which is copied
// whole. With clean set (--repo, whose image a runner host will boot for every run of
// that repository) the checkout must be a git one without changes or untracked files,
// so what is built is what was committed.
func checkoutFiles(ctx context.Context, dir string, clean bool) ([]string, error) {
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_OPTIONAL_LOCKS=0")
		return cmd.Output()
	}
	top, err := git("rev-parse", "--show-toplevel")
	abs, aerr := filepath.Abs(dir)
	if err != nil || aerr != nil || filepath.Clean(strings.TrimSpace(string(top))) != filepath.Clean(abs) {
		if clean {
			return nil, fmt.Errorf("%w: --repo builds the image the runner host boots for every run of the repository, so DIR must be the root of a git checkout (of the commit you trust)", errUsage)
		}
		return nil, nil
	}
	if clean {
		status, err := git("status", "--porcelain", "--untracked-files=normal")
		if err != nil {
			return nil, fmt.Errorf("failed to read the checkout's status: %w", err)
		}
		if len(strings.TrimSpace(string(status))) > 0 {
			return nil, fmt.Errorf("%w: with --repo the checkout must be clean (what is built is what every run of the repository boots); commit or stash first:\n%s", errUsage, status)
		}
	}
	out, err := git("ls-files", "-z", "--cached")
	if err != nil {
		return nil, fmt.Errorf("failed to list the checkout's tracked files: %w", err)
	}
	files := []string{}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// grantCredentials is what the runner host's credentials file (BUMPER_CREDENTIALS)
// grants repo of the credentials its policy names, as a run's exchange grants them.
func grantCredentials(repo string, names []string) ([]credential.Credential, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if repo == "" {
		return nil, fmt.Errorf("%w: %s asks for the credentials %s: give --repo OWNER/NAME, the repository the runner host's %s grants them to", errUsage, repoconfig.Path, strings.Join(names, ", "), credentials.Env)
	}
	host, err := loadCredentials()
	if err != nil {
		return nil, err
	}
	return host.Grant(repo, names)
}

// loadCredentials reads the runner host's credentials file, nil when BUMPER_CREDENTIALS
// is not set.
func loadCredentials() (*credentials.Host, error) {
	p := os.Getenv(credentials.Env)
	if p == "" {
		return nil, nil
	}
	h, err := credentials.Load(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", credentials.Env, err)
	}
	return h, nil
}
