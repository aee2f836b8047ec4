package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// ImageInfo is what the checks need of an image.
type ImageInfo struct {
	Dir    string
	Digest string // sha256:…
	Kernel string // the vmlinux the KVM canary boots
	About  string // a few words for the report: the kernel release, the suite
}

// Probes look at the machine. Each is small so a test can replace it; a nil field is
// the real probe.
type Probes struct {
	// Euid is the effective user ID.
	Euid func() int
	// Network tries what a run's network needs (netns.Probe).
	Network func() netns.ProbeResult
	// LookPath finds a program (exec.LookPath).
	LookPath func(string) (string, error)
	// QEMUVersion runs `qemu --version` and returns its first line.
	QEMUVersion func(ctx context.Context, qemu string) (string, error)
	// LookupUser fails when the QEMU user does not exist.
	LookupUser func(string) error
	// KnownAccel and ChooseAccel are the sandbox's accelerator probe and KVM canary.
	KnownAccel  func(sandbox.Config) (sandbox.AccelChoice, bool)
	ChooseAccel func(context.Context, sandbox.Config) sandbox.AccelChoice
	// LoadImage loads and verifies an image directory (image.Load).
	LoadImage func(dir string) (ImageInfo, error)
	// CachedImage is the most recently used image in a cache that loads, if any.
	CachedImage func(cache string) (ImageInfo, bool)
	// BuildHost fails when the default image cannot be built here (image.CheckBuildHost).
	BuildHost func() error
	// Writable fails when dir cannot be created or written.
	Writable func(dir string) error
	// FreeBytes is the space available to this user on the filesystem of dir, or of its
	// nearest existing parent, which it returns as at.
	FreeBytes func(dir string) (free uint64, at string, err error)
}

func (p Probes) withDefaults() Probes {
	if p.Euid == nil {
		p.Euid = os.Geteuid
	}
	if p.Network == nil {
		p.Network = netns.Probe
	}
	if p.LookPath == nil {
		p.LookPath = exec.LookPath
	}
	if p.QEMUVersion == nil {
		p.QEMUVersion = qemuVersion
	}
	if p.LookupUser == nil {
		p.LookupUser = lookupUser
	}
	if p.KnownAccel == nil {
		p.KnownAccel = sandbox.KnownAccel
	}
	if p.ChooseAccel == nil {
		p.ChooseAccel = sandbox.ChooseAccel
	}
	if p.LoadImage == nil {
		p.LoadImage = loadImage
	}
	if p.CachedImage == nil {
		p.CachedImage = cachedImage
	}
	if p.BuildHost == nil {
		p.BuildHost = image.CheckBuildHost
	}
	if p.Writable == nil {
		p.Writable = writable
	}
	if p.FreeBytes == nil {
		p.FreeBytes = freeBytes
	}
	return p
}

func qemuVersion(ctx context.Context, qemu string) (string, error) {
	path, err := exec.LookPath(qemu)
	if err != nil {
		return "", fmt.Errorf("%s not found", qemu)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil {
		return "", fmt.Errorf("%s --version failed: %w: %s", path, err, first)
	}
	return fmt.Sprintf("%s: %s", path, strings.TrimSpace(first)), nil
}

var numericUser = regexp.MustCompile(`^[0-9]+(:[0-9]+)?$`)

// lookupUser accepts what the sandbox accepts: a user name that exists, or uid[:gid].
func lookupUser(name string) error {
	if numericUser.MatchString(name) {
		return nil
	}
	if _, err := user.Lookup(name); err != nil {
		return fmt.Errorf("user %q does not exist here", name)
	}
	return nil
}

func loadImage(dir string) (ImageInfo, error) {
	im, err := image.Load(dir)
	if err != nil {
		return ImageInfo{}, err
	}
	m := im.Manifest()
	return ImageInfo{Dir: im.Dir(), Digest: m.Digest, Kernel: im.KernelPath(),
		About: fmt.Sprintf("kernel %s, Debian %s", m.Kernel.Release, m.Suite)}, nil
}

// cachedImage is the most recently used complete image of a cache (a build or a run
// marks an image used by its directory's time), verified.
func cachedImage(cache string) (ImageInfo, bool) {
	dir := image.ImagesDir(cache)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ImageInfo{}, false
	}
	type cand struct {
		path string
		mod  time.Time
	}
	var cands []cand
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if info, err := os.Stat(filepath.Join(p, image.ManifestFile)); err == nil && info.Mode().IsRegular() {
			if di, err := e.Info(); err == nil {
				cands = append(cands, cand{p, di.ModTime()})
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mod.After(cands[j].mod) })
	for _, c := range cands {
		if info, err := loadImage(c.path); err == nil {
			return info, true
		}
	}
	return ImageInfo{}, false
}

// writable creates dir if needed and writes and removes a file in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".bumper-preflight-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.Write([]byte("ok"))
	return errors.Join(werr, f.Close(), os.Remove(name))
}

func freeBytes(dir string) (uint64, string, error) {
	at := filepath.Clean(dir)
	for {
		var st unix.Statfs_t
		err := unix.Statfs(at, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), at, nil
		}
		parent := filepath.Dir(at)
		if !errors.Is(err, fs.ErrNotExist) || parent == at {
			return 0, at, err
		}
		at = parent
	}
}
