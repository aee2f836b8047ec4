package image

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Defaults for BuildConfig.
const (
	DefaultCacheDir      = "/var/cache/bumper"
	DefaultSuite         = "bookworm"
	DefaultKernelPackage = "linux-image-amd64"
	// DefaultHeadroom is the free space left in the root filesystem for what a run
	// writes outside its workspace disk (home directory, package caches, /tmp).
	DefaultHeadroom = 1 << 30
)

// busyboxPackage provides the initramfs's shell and tools: static, so it needs no libc.
const busyboxPackage = "busybox-static"

// assembleRecipe changes whenever the assembly of rootfs.ext4 changes.
const assembleRecipe = 1

// BuildConfig says what image to build. Zero values take the defaults.
type BuildConfig struct {
	// CacheDir holds the download, debootstrap and image caches (default DefaultCacheDir).
	CacheDir string
	// OutDir is where image directories go (default CacheDir/images).
	OutDir string
	// Packages are extra Debian packages for the rootfs (for example nodejs), on top of
	// minbase and BasePackages().
	Packages []string
	// AgentBinary is the static bumper binary to install as the guest agent (required).
	AgentBinary string
	// Suite is the Debian suite of the rootfs (default DefaultSuite).
	Suite string
	// Mirror is the Debian mirror for debootstrap (default: the host's apt source for Suite).
	Mirror string
	// KernelPackage is the kernel package or metapackage (default DefaultKernelPackage).
	KernelPackage string
	// Headroom is the free space in bytes added to the root filesystem (default DefaultHeadroom).
	Headroom int64
	// CACerts are PEM files of CA certificates the guest must trust besides Debian's:
	// a network that inspects TLS (a company's egress proxy, a registry mirror with its
	// own CA). They are added to the image's trust store
	// (/etc/ssl/certs/ca-certificates.crt, and /usr/local/share/ca-certificates so
	// update-ca-certificates keeps them), and their content is part of the image's key.
	CACerts []string
	// Harness, when set, is the agent CLI installed into the image (its linux-x64 build
	// from the npm registry, fetched on the host at build time).
	Harness *Harness
	// NPMRegistry is where the harness comes from (default DefaultNPMRegistry).
	NPMRegistry string
	// Progress receives the named build steps with durations (nil: none).
	Progress io.Writer
}

var (
	suiteName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	mirrorURL = regexp.MustCompile(`^https?://[^\s]+$`)
)

// inputs are everything an image is made from; their digest keys the image cache.
type inputs struct {
	Recipe   [3]int
	Suite    string
	Mirror   string
	Packages []string
	Kernel   debPackage
	Busybox  debPackage
	Agent    string
	Headroom int64
	// CACerts is the digest of the extra CA certificates; empty (and left out of the
	// key, so images without any keep their keys) when there are none.
	CACerts string `json:",omitempty"`
	// caPEM are the extra CA certificates, as assemble installs them.
	caPEM []byte
	// Harness is the agent CLI, "name@version sha512-…"; empty (and left out of the key)
	// without one.
	Harness string `json:",omitempty"`
	// harness is its tarball, as assemble installs it.
	harness *harnessTarball
}

func (in inputs) key() string { return jsonKey(in) }

// jsonKey names a cache entry by the hex SHA-256 of v's JSON encoding. v holds only
// strings, numbers and slices of them, which always encode.
func jsonKey(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// withDefaults fills in defaults and checks the configuration.
func (c BuildConfig) withDefaults() (BuildConfig, error) {
	if c.CacheDir == "" {
		c.CacheDir = DefaultCacheDir
	}
	if c.OutDir == "" {
		c.OutDir = ImagesDir(c.CacheDir)
	}
	if c.Suite == "" {
		c.Suite = DefaultSuite
	}
	if c.KernelPackage == "" {
		c.KernelPackage = DefaultKernelPackage
	}
	if c.Headroom == 0 {
		c.Headroom = DefaultHeadroom
	}
	if c.NPMRegistry == "" {
		c.NPMRegistry = DefaultNPMRegistry
	}
	if c.Harness != nil {
		if err := c.Harness.check(); err != nil {
			return c, err
		}
	}
	if c.Headroom < 0 {
		return c, fmt.Errorf("invalid image config: headroom %d is negative", c.Headroom)
	}
	if !suiteName.MatchString(c.Suite) {
		return c, fmt.Errorf("invalid image config: suite %q is not a Debian suite name such as bookworm", c.Suite)
	}
	if c.Mirror == "" {
		m, err := hostMirror(c.Suite, "/etc/apt")
		if err != nil {
			return c, err
		}
		c.Mirror = m
	}
	if !mirrorURL.MatchString(c.Mirror) {
		return c, fmt.Errorf("invalid image config: mirror %q is not an http(s) URL such as http://deb.debian.org/debian", c.Mirror)
	}
	c.Mirror = strings.TrimSuffix(c.Mirror, "/")
	seen := map[string]bool{}
	var pkgs []string
	for _, p := range append(BasePackages(), c.Packages...) {
		p = strings.TrimSpace(p)
		if p == "" || seen[p] {
			continue
		}
		if !debPackageName.MatchString(p) {
			return c, fmt.Errorf("invalid image config: %q is not a Debian package name (lower-case letters, digits, '+', '-', '.'; separate several with commas)", p)
		}
		seen[p] = true
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	c.Packages = pkgs
	if c.AgentBinary == "" {
		return c, errors.New("invalid image config: no agent binary; pass the static bumper binary to install as the guest agent")
	}
	return c, nil
}

// checkAgent refuses an agent the guest could not run: it must be a static x86-64 ELF
// executable (PID 1 starts before any dynamic loader or library is known to work).
func checkAgent(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("invalid agent binary %s: %w; pass a bumper binary built for linux/amd64", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("invalid agent binary %s: not an x86-64 executable; build it with GOOS=linux GOARCH=amd64", path)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("invalid agent binary %s: it is dynamically linked, and the guest runs it before any library is set up; build it with CGO_ENABLED=0 go build ./cmd/bumper", path)
		}
	}
	sum, _, err := hashFile(path)
	if err != nil {
		return "", fmt.Errorf("invalid agent binary: %w", err)
	}
	return sum, nil
}

// ImagesDir is where a cache keeps its image directories (BuildConfig.OutDir's default).
func ImagesDir(cacheDir string) string { return filepath.Join(cacheDir, "images") }

// CheckBuildHost fails, saying what to install, when Build cannot run here: it needs
// root and the Debian tools it runs.
func CheckBuildHost() error {
	if os.Geteuid() != 0 {
		return errors.New("failed to build the image: debootstrap needs root: run as root")
	}
	tools := []struct{ bin, pkg string }{
		{"debootstrap", "debootstrap"},
		{"apt-get", "apt"},
		{"apt-cache", "apt"},
		{"dpkg-deb", "dpkg"},
		{"dpkg-query", "dpkg"},
		{"mkfs.ext4", "e2fsprogs"},
		{"chroot", "coreutils"},
		{"cp", "coreutils"},
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t.bin); err != nil {
			return fmt.Errorf("failed to build the image: %s is not installed; run apt-get install %s", t.bin, t.pkg)
		}
	}
	return nil
}
