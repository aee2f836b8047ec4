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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bumperdev/bumper/action/credentials"
	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/credential"
	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/internal/environment"
	"github.com/bumperdev/bumper/internal/fsutil"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
)

// DefaultSetupTimeout bounds a setup's VM session.
const DefaultSetupTimeout = 30 * time.Minute

// setupFreeMargin is the free space a setup needs in the image cache beyond the most its
// delta can hold of file data: the base's file system metadata the setup rewrites (inode
// tables, bitmaps, directories), the delta's qcow2 tables, the manifest.
const setupFreeMargin = 256 << 20

// ensureSetupSpace fails, before the setup runs, when the disks cannot hold what saving
// its root disk writes (sandbox.Session.SaveRootDisk, image.Derive), at worst: a setup
// that fills the base's file system. With disk the base's root disk size and free what
// its file system leaves free (the disk less the base's allocated blocks): the run's
// overlay in the run directory grows to free; saving flattens the disk there into a
// checked raw copy of at most disk, then removes the overlay and writes the delta, at
// most free plus setupFreeMargin, in the images directory, where it stays. Both
// directories on one file system (the usual case) need disk + free + setupFreeMargin at
// the peak; what stays is the delta alone, where it was a full copy of disk before.
func ensureSetupSpace(base *image.Image, imagesDir, runDir string) error {
	if runDir == "" {
		runDir = os.TempDir()
	}
	disk := uint64(max(base.DiskBytes(), 0))
	free := disk
	if st, err := os.Stat(base.RootfsPath()); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			free -= min(disk, uint64(sys.Blocks)*512)
		}
	}
	keep := free + setupFreeMargin
	scratch := disk + free
	if sameFileSystem(imagesDir, runDir) {
		return cachedir.EnsureFree(imagesDir, disk+free+setupFreeMargin, "saving the environment's root disk (a checked copy in the run directory, then the delta kept as its image)")
	}
	if err := cachedir.EnsureFree(imagesDir, keep, "keeping the environment's root disk (a delta over the base's)"); err != nil {
		return err
	}
	return cachedir.EnsureFree(runDir, scratch, "the setup's VM (its root overlay, then a checked copy of its root disk)")
}

// sameFileSystem reports whether a and b are on one file system (false when either
// cannot be read).
func sameFileSystem(a, b string) bool {
	sa, ea := os.Stat(a)
	sb, eb := os.Stat(b)
	if ea != nil || eb != nil {
		return false
	}
	da, oka := sa.Sys().(*syscall.Stat_t)
	db, okb := sb.Sys().(*syscall.Stat_t)
	return oka && okb && da.Dev == db.Dev
}

// logTail is how much of a failed setup's output its error quotes.
const logTail = 4 << 10

// Options say what to build and with what.
type Options struct {
	// RepoDir is the repository's checkout; it is copied (without .git) into the VM's
	// workspace, and unless Tree is set the key's files are read from it (never
	// through a link).
	RepoDir string
	// Files, when set, are the only paths (relative, slash-separated) copied from
	// RepoDir into the setup's workspace: a local checkout's tracked files, so nothing
	// git ignores (an .env, an .npmrc with a token) reaches a VM whose allowlist the
	// repository chose. Nil copies the whole tree but .git (the runner's fresh fetch).
	Files []string
	// Tree, when set, is what the key's files are read from instead of RepoDir's
	// working tree: the runner's is the approved base commit's objects, so the key
	// covers the commit whatever a checkout filter did to the files.
	Tree environment.Tree
	// Repository (owner/name), when set, scopes the key to that repository
	// (environment.Identity.In): the runner's always is, so no other repository's
	// setup can leave the image its runs boot. `bumper env build --repo` gives the same
	// key as the runner's.
	Repository string
	// Env is the repository's environment: section.
	Env repoconfig.Environment
	// Image says where the base image comes from: its cache, the guest agent binary,
	// progress output. Its Packages are replaced by the environment's.
	Image image.BuildConfig
	// VM is the setup VM's shape (CPUs, memory, accelerator, QEMU user, state directory);
	// its image fields and Timeout are set here (Timeout 0: DefaultSetupTimeout).
	VM sandbox.Config
	// Resolve pins host names to addresses for the setup's firewall, trusted as given
	// (firewall.Config.Resolve): a runner host's setting, for a registry mirror on a
	// private address; never the repository's.
	Resolve map[string]string
	// Credentials are the runner host's credentials the repository asked for and was
	// granted (action/credentials): the setup's firewall adds them toward their hosts,
	// and the setup sees their placeholders and URLs (credentials.GuestEnv), never a
	// value. CAFile, when set, is what the firewall verifies their hosts against.
	Credentials []credential.Credential
	CAFile      string
	// Audit is the setup firewall's audit log (required when there is a setup).
	Audit string
	// Log receives the setup's output as it runs (nil: discarded).
	Log io.Writer
}

// Result is the environment as found or built.
type Result struct {
	// Image is what runs of the repository boot: the derived image when there is a
	// setup, else the base image with the packages. It is nil when the setup failed
	// (Build's error says why; Key and Base are set).
	Image *image.Image
	// Base is the base image with the environment's packages.
	Base *image.Image
	// Key is the environment's identity and what went into it.
	Key environment.Identity
	// Built says this call ran the setup; false when an image with the key was found
	// (or there is no setup).
	Built bool
	// Setup is how long the setup's session took, when it ran.
	Setup time.Duration
}

// Build finds the environment's image, or builds it. When the setup fails, the error
// says why and the Result still names the key and the base image (for the evidence).
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
	var key environment.Identity
	if o.Tree != nil {
		key, err = environment.KeyAt(ctx, base.Manifest().Digest, o.Env, o.Tree)
	} else {
		key, err = environment.Key(base.Manifest().Digest, o.Env, o.RepoDir)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to compute the environment's key: %w", err)
	}
	if o.Repository != "" {
		key = key.In(o.Repository)
	}
	res := &Result{Image: base, Base: base, Key: key}
	if o.Env.Setup == "" {
		return res, nil
	}
	imagesDir := filepath.Dir(base.Dir())
	if img, ok := image.FindDerived(imagesDir, key.Digest); ok {
		res.Image = img
		return res, nil
	}
	// Runs of one repository that start together (several issues approved at once)
	// build its environment once: the others wait, then find it.
	unlock, err := image.LockDerivation(ctx, imagesDir, key.Digest)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if img, ok := image.FindDerived(imagesDir, key.Digest); ok {
		res.Image = img
		return res, nil
	}
	// The setup's root disk is kept as the environment's image beside the base's: a full
	// cache fails here, before the setup runs, rather than after it.
	if err := ensureSetupSpace(base, imagesDir, o.VM.RunDir); err != nil {
		return res, err
	}
	start := time.Now()
	img, err := setup(ctx, o, base, key, imagesDir)
	res.Setup = time.Since(start)
	if err != nil {
		res.Image = nil
		return res, err
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
	if err := copyTree(o.RepoDir, filepath.Join(ws, "repo"), o.Files); err != nil {
		return nil, err
	}
	vm := o.VM
	vm.UseImage(sandbox.ImageFiles(base))
	vm.SnapshotDir = "" // the setup boots cold: its disk becomes an image
	if vm.Timeout <= 0 {
		vm.Timeout = DefaultSetupTimeout
	}
	start := func(ctx context.Context, listen string) (func() error, error) {
		fw, err := firewall.New(&firewall.Config{Listen: listen, Audit: o.Audit, Allow: o.Env.Allow, Resolve: o.Resolve, Secrets: &firewall.Secrets{},
			Credentials: o.Credentials, Gateway: firewall.GatewayConfig{CAFile: o.CAFile}})
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
	res, err := s.Run(ctx, []string{"sh", "-c", `cd /workspace/repo && exec sh "$0"`, o.Env.Setup}, credentials.GuestEnv(o.Credentials), out, out)
	if err != nil {
		return nil, fmt.Errorf("failed to run the setup %s: %w", o.Env.Setup, err)
	}
	if res.ExitCode != 0 || res.Error != "" || res.TimedOut {
		why := fmt.Sprintf("exit status %d", res.ExitCode)
		if res.Error != "" {
			why = res.Error
		}
		// The firewall's log is complete only once it stopped, with the session.
		cerr := s.Close(context.WithoutCancel(ctx))
		first, lines := refusals(o.Audit, o.Env.Allow)
		return nil, errors.Join(fmt.Errorf("the setup %s failed (%s)%s; nothing was cached. Its output ended with:\n%s\n%s", o.Env.Setup, why, first, tail.String(), lines), cerr)
	}
	// What the setup left in /out and /tmp is not the environment: every run would
	// start with it (a plan, a decision ledger, a bundle the runner would read as the
	// agent's).
	clear := `rm -rf /out/* /out/.[!.]* /tmp/* /tmp/.[!.]* 2>/dev/null; [ -z "$(ls -A /out)" ]`
	res, err = s.Run(ctx, []string{"sh", "-c", clear}, nil, io.Discard, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("failed to clear the setup's /out and /tmp before keeping its disk: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("failed to clear the setup's /out and /tmp before keeping its disk (exit %d): the setup left there what the agent user cannot remove", res.ExitCode)
	}
	staging, err := image.RootDiskStaging(imagesDir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	rootfs := filepath.Join(staging, "rootfs.ext4")
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

// copyTree copies a checkout into dst without .git, only the paths in only when it is
// not nil: regular files, directories and
// links (as links; they resolve inside the VM, not here).
func copyTree(src, dst string, only []string) error {
	var keep map[string]bool
	if only != nil {
		keep = map[string]bool{".": true}
		for _, f := range only {
			// A listed file keeps its directories.
			for p := filepath.Clean(filepath.FromSlash(f)); p != "." && p != string(filepath.Separator); p = filepath.Dir(p) {
				keep[p] = true
			}
		}
	}
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
		if keep != nil && !keep[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
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

// maxRefusals is how many of the firewall's refusals a failed setup's error quotes.
const maxRefusals = 5

// refusals says what the setup's firewall refused, in its own audit lines: the usual
// reason a setup fails is a host missing from environment.allow. first is a short
// clause for the error's first line (what a work item's reason keeps); lines the
// firewall's own words.
func refusals(path string, allow []string) (first, lines string) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Sprintf("The firewall's audit log %s could not be read: %v", path, err)
	}
	defer f.Close()
	refused, err := audit.Refused(f, maxRefusals)
	switch {
	case err != nil:
		return "", fmt.Sprintf("The firewall's audit log %s could not be read: %v", path, err)
	case len(refused) == 0:
		return "", fmt.Sprintf("The firewall refused nothing (its audit log: %s).", path)
	}
	var last struct {
		Target string `json:"target"`
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal([]byte(refused[len(refused)-1]), &last)
	first = fmt.Sprintf(" after the firewall refused %s (%s): add the host to environment.allow (now %s) if the setup needs it", last.Target, last.Reason, orNone(allow))
	return first, fmt.Sprintf("The firewall's audit log %s says:\n%s", path, strings.Join(refused, "\n"))
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "empty"
	}
	return strings.Join(list, ", ")
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// tailBuffer keeps the last max bytes written, and the few before them that a
// character they start inside of began with.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - (t.max + utf8.UTFMax - 1); over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is the tail as text for an error: at most max bytes, from the first character
// that starts within the last max written, and bytes that are not UTF-8 (the setup
// prints what it likes) written as U+FFFD. The error ends up as the run's reason,
// which serve takes only as valid UTF-8.
func (t *tailBuffer) String() string {
	s := textcut.Tail(string(t.buf), t.max)
	return textcut.Tail(strings.ToValidUTF8(s, "\uFFFD"), t.max)
}
