// Package envbuild builds a repository's environment (issue #12): the base image with the
// environment's Debian packages, and, when the repository has a setup script, an image
// derived from it holding what the setup left on the root filesystem. The setup runs once,
// in a sandbox VM, as the unprivileged agent user, behind a firewall that allows only the
// environment's own hosts, with no GitHub token and no model key; its audit log is kept.
// The result is found again by the environment's key, so a second build of the same
// inputs runs nothing.
package envbuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/internal/environment"
	"github.com/bumperdev/bumper/internal/fsutil"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
)

// DefaultSetupTimeout bounds a setup's VM session.
const DefaultSetupTimeout = 30 * time.Minute

// logTail is how much of a failed setup's output its error quotes.
const logTail = 4 << 10

// Options say what to build and with what.
type Options struct {
	// RepoDir is the repository's checkout; its setup script and inputs are read from it
	// (never through a link), and it is copied (without .git) into the VM's workspace.
	RepoDir string
	// Env is the repository's environment: section.
	Env repoconfig.Environment
	// Image says where the base image comes from: its cache, the guest agent binary,
	// progress output. Its Packages are replaced by the environment's.
	Image image.BuildConfig
	// VM is the setup VM's shape (CPUs, memory, accelerator, QEMU user, state directory);
	// its image fields and Timeout are set here (Timeout 0: DefaultSetupTimeout).
	VM sandbox.Config
	// Audit is the setup firewall's audit log (required when there is a setup).
	Audit string
	// Log receives the setup's output as it runs (nil: discarded).
	Log io.Writer
}

// Result is the environment as found or built.
type Result struct {
	// Image is what runs of the repository boot: the derived image when there is a
	// setup, else the base image with the packages.
	Image *image.Image
	// Key is the environment's identity and what went into it.
	Key environment.Identity
	// Built says this call ran the setup; false when an image with the key was found
	// (or there is no setup).
	Built bool
	// Setup is how long the setup's session took, when it ran.
	Setup time.Duration
}

// Build finds the environment's image, or builds it.
func Build(ctx context.Context, o Options) (*Result, error) {
	if o.Env.Setup != "" && o.Audit == "" {
		return nil, errors.New("failed to build the environment: no audit log path for the setup's firewall")
	}
	bc := o.Image
	bc.Packages = o.Env.Packages
	base, err := image.Build(ctx, bc)
	if err != nil {
		return nil, fmt.Errorf("failed to build the environment's base image: %w", err)
	}
	key, err := environment.Key(base.Manifest().Digest, o.Env, o.RepoDir)
	if err != nil {
		return nil, fmt.Errorf("failed to compute the environment's key: %w", err)
	}
	res := &Result{Image: base, Key: key}
	if o.Env.Setup == "" {
		return res, nil
	}
	imagesDir := filepath.Dir(base.Dir())
	if img, ok := image.FindDerived(imagesDir, key.Digest); ok {
		res.Image = img
		return res, nil
	}
	start := time.Now()
	img, err := setup(ctx, o, base, key, imagesDir)
	res.Setup = time.Since(start)
	if err != nil {
		return nil, err
	}
	res.Image, res.Built = img, true
	return res, nil
}

// setup runs the setup script in a VM of base and derives the environment's image from
// what it left. Nothing is kept when it fails.
func setup(ctx context.Context, o Options, base *image.Image, key environment.Identity, imagesDir string) (_ *image.Image, err error) {
	work, err := os.MkdirTemp("", "bumper-env-")
	if err != nil {
		return nil, fmt.Errorf("failed to make the setup's workspace: %w", err)
	}
	defer os.RemoveAll(work)
	ws := filepath.Join(work, "disk")
	if err := copyTree(o.RepoDir, filepath.Join(ws, "repo")); err != nil {
		return nil, err
	}
	vm := o.VM
	m := base.Manifest()
	vm.Kernel, vm.Initrd, vm.Rootfs, vm.Cmdline = base.KernelPath(), base.InitrdPath(), base.RootfsPath(), m.Cmdline
	vm.SnapshotDir = "" // the setup boots cold: its disk becomes an image
	if vm.Timeout <= 0 {
		vm.Timeout = DefaultSetupTimeout
	}
	start := func(ctx context.Context, listen string) (func() error, error) {
		fw, err := firewall.New(&firewall.Config{Listen: listen, Audit: o.Audit, Allow: o.Env.Allow, Secrets: &firewall.Secrets{}})
		if err != nil {
			return nil, err
		}
		if err := fw.Start(ctx); err != nil {
			return nil, err
		}
		return func() error { return fw.Stop(context.WithoutCancel(ctx)) }, nil
	}
	s, err := sandbox.Open(ctx, sandbox.SessionSpec{Config: vm, StartProxy: start})
	if err != nil {
		return nil, fmt.Errorf("failed to open the setup's VM: %w", err)
	}
	defer func() { err = errors.Join(err, s.Close(context.WithoutCancel(ctx))) }()
	if err := s.Start(ctx, ws); err != nil {
		return nil, fmt.Errorf("failed to boot the setup's VM: %w", err)
	}
	tail := &tailBuffer{max: logTail}
	out := io.MultiWriter(tail, orDiscard(o.Log))
	res, err := s.Run(ctx, []string{"sh", "-c", `cd /workspace/repo && exec sh "$0"`, o.Env.Setup}, nil, out, out)
	if err != nil {
		return nil, fmt.Errorf("failed to run the setup %s: %w", o.Env.Setup, err)
	}
	if res.ExitCode != 0 || res.Error != "" || res.TimedOut {
		why := fmt.Sprintf("exit status %d", res.ExitCode)
		if res.Error != "" {
			why = res.Error
		}
		return nil, fmt.Errorf("the setup %s failed (%s); nothing was cached. Its output ended with:\n%s\nThe firewall's decisions are in %s", o.Env.Setup, why, tail.String(), o.Audit)
	}
	rootfs := filepath.Join(imagesDir, ".env-rootfs-"+strings.TrimPrefix(key.Digest, "sha256:")[:16])
	defer os.Remove(rootfs)
	if err := s.SaveRootDisk(ctx, rootfs); err != nil {
		return nil, fmt.Errorf("failed to keep what the setup left: %w", err)
	}
	describe := map[string]string{"setup": o.Env.Setup, "cache_paths": strings.Join(o.Env.CachePaths, " "), "allow": strings.Join(o.Env.Allow, " ")}
	img, err := image.Derive(base, rootfs, image.Derivation{Key: key.Digest, Describe: maps.Clone(describe)})
	if err != nil {
		return nil, fmt.Errorf("failed to make the environment's image: %w", err)
	}
	return img, nil
}

// copyTree copies a checkout into dst without .git: regular files, directories and
// links (as links; they resolve inside the VM, not here).
func copyTree(src, dst string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && p != src {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return fsutil.CopyFile(p, target, info.Mode().Perm())
		default:
			return nil // sockets, pipes, devices: nothing a setup needs
		}
	})
	if err != nil {
		return fmt.Errorf("failed to copy %s into the setup's workspace: %w", src, err)
	}
	return nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
