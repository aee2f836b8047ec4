package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bumperdev/bumper/sandbox/image"
)

func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "build" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return runImageBuild(ctx, []string{"-h"}, stdout, stderr)
		}
		return fmt.Errorf("%w: want 'bumper image build [flags]'", errUsage)
	}
	return runImageBuild(ctx, args[1:], stdout, stderr)
}

func runImageBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image build", "[--out DIR] [--packages LIST] [--cache DIR]", stderr)
	out := fs.String("out", "", "directory for image directories (default CACHE/images)")
	packages := fs.String("packages", "", "extra Debian packages for the rootfs, comma-separated (e.g. nodejs)")
	cache := fs.String("cache", image.DefaultCacheDir, "cache for kernels, debootstrap trees and images")
	agent := fs.String("agent", "", "static bumper binary to install as the guest agent (default: this binary)")
	mirror := fs.String("mirror", "", "Debian mirror for debootstrap (default: the host's apt source for the suite)")
	suite := fs.String("suite", image.DefaultSuite, "Debian suite of the rootfs")
	kernel := fs.String("kernel", image.DefaultKernelPackage, "kernel package or metapackage")
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
		Progress:      stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, im.Dir())
	return nil
}
