package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
)

func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "build":
			return runImageBuild(ctx, args[1:], stdout, stderr)
		case "prune":
			return runImagePrune(ctx, args[1:], stdout, stderr)
		case "-h", "--help", "help":
			fmt.Fprintln(stderr, "bumper image build [flags]   build a sandbox VM image")
			fmt.Fprintln(stderr, "bumper image prune [flags]   remove cached images and snapshots nobody used lately")
			return runImageBuild(ctx, []string{"-h"}, stdout, stderr)
		}
	}
	return fmt.Errorf("%w: want 'bumper image build [flags]' or 'bumper image prune [flags]'", errUsage)
}

func runImagePrune(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image prune", "[--cache DIR] [--unused-for AGE] [--dry-run]", stderr)
	cache := fs.String("cache", image.DefaultCacheDir, "the cache to prune (images, boot files, debootstrap trees, snapshots)")
	age := fs.String("unused-for", "14d", "remove entries no build or run used for this long (e.g. 14d, 36h)")
	dryRun := fs.Bool("dry-run", false, "only list what would be removed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: image prune takes no arguments, got %q", errUsage, fs.Args())
	}
	d, err := parseAge(*age)
	if err != nil {
		return fmt.Errorf("%w: --unused-for: %w", errUsage, err)
	}
	removed, err := sandbox.PruneCache(*cache, time.Now().Add(-d), *dryRun)
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	for _, r := range removed {
		fmt.Fprintf(stdout, "%s %s (%s; %s)\n", verb, r.Path, formatBytes(r.Bytes), r.Why)
	}
	fmt.Fprintf(stdout, "%s %d cache entries, %s\n", verb, len(removed), formatBytes(cachedir.Total(removed)))
	return err
}

// parseAge parses a Go duration or a number of days such as 14d.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age: use days (14d) or a duration (36h)", s)
	}
	return d, nil
}

// formatBytes prints a size in MiB or GiB.
func formatBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// envNPMRegistry names the npm registry harnesses come from (a mirror of the host's).
const envNPMRegistry = "BUMPER_NPM_REGISTRY"

// parseHarness reads NAME@VERSION.
func parseHarness(s string) (image.Harness, error) {
	name, version, ok := strings.Cut(s, "@")
	if !ok || name == "" || version == "" {
		return image.Harness{}, fmt.Errorf("%q: want NAME@VERSION, for example claude-code@2.1.328", s)
	}
	return image.Harness{Name: name, Version: version}, nil
}

// envOr is the environment variable's value, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runImageBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image build", "[--out DIR] [--packages LIST] [--harness NAME@VERSION] [--ca-file FILE]... [--cache DIR]", stderr)
	out := fs.String("out", "", "directory for image directories (default CACHE/images)")
	packages := fs.String("packages", "", "extra Debian packages for the rootfs, comma-separated (e.g. nodejs)")
	cache := fs.String("cache", image.DefaultCacheDir, "cache for kernels, debootstrap trees and images")
	agent := fs.String("agent", "", "static bumper binary to install as the guest agent (default: this binary)")
	mirror := fs.String("mirror", "", "Debian mirror for debootstrap (default: the host's apt source for the suite)")
	suite := fs.String("suite", image.DefaultSuite, "Debian suite of the rootfs")
	kernel := fs.String("kernel", image.DefaultKernelPackage, "kernel package or metapackage")
	var caFiles stringList
	fs.Var(&caFiles, "ca-file", "PEM file of CA certificates the guest trusts besides Debian's (repeatable): a network that inspects TLS")
	harnessFlag := fs.String("harness", "", "agent CLI to install, NAME@VERSION with an exact version: claude-code@2.1.328 or codex@0.171.0 (from the npm registry, fetched here)")
	registry := fs.String("npm-registry", envOr(envNPMRegistry, image.DefaultNPMRegistry), "npm registry the harness comes from (env "+envNPMRegistry+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: image build takes no arguments, got %q", errUsage, fs.Args())
	}
	if *agent == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("failed to find this binary to use as the guest agent (pass --agent): %w", err)
		}
		*agent = self
	}
	var harness *image.Harness
	if *harnessFlag != "" {
		h, err := parseHarness(*harnessFlag)
		if err != nil {
			return fmt.Errorf("%w: --harness: %w", errUsage, err)
		}
		harness = &h
	}
	var pkgs []string
	if *packages != "" {
		pkgs = strings.Split(*packages, ",")
	}
	im, err := image.Build(ctx, image.BuildConfig{
		CacheDir:      *cache,
		OutDir:        *out,
		Packages:      pkgs,
		AgentBinary:   *agent,
		Suite:         *suite,
		Mirror:        *mirror,
		KernelPackage: *kernel,
		CACerts:       caFiles,
		Harness:       harness,
		NPMRegistry:   *registry,
		Progress:      stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, im.Dir())
	return nil
}
