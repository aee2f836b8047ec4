package image

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/fsutil"
	"github.com/bumperdev/bumper/internal/release"
)

// Harness is an agent CLI installed into the image from the npm registry, at one exact
// version: the image's key holds its name, version and the tarball's integrity, so a
// run boots exactly the CLI its repository pinned.
type Harness struct {
	Name    string
	Version string
}

// DefaultNPMRegistry is where harness tarballs come from unless BuildConfig says
// otherwise.
const DefaultNPMRegistry = "https://registry.npmjs.org"

// harnessPackage says where a harness's linux-x64 build is on npm and which of its
// files the image needs. The platform package holds the native binary the CLI's own
// package would pick at install time, so the image needs no Node.js and runs no npm
// install script.
type harnessPackage struct {
	// npmName is the package; versionSuffix is added to the harness's version (codex
	// publishes its platform builds as versions of its main package).
	npmName, versionSuffix string
	// files maps a path in the tarball to the name it is installed as under
	// HarnessDir; commands are those also linked into /usr/local/bin.
	files    map[string]string
	commands map[string]bool
}

var harnessPackages = map[string]harnessPackage{
	"claude-code": {npmName: "@anthropic-ai/claude-code-linux-x64",
		files:    map[string]string{"package/claude": "claude"},
		commands: map[string]bool{"claude": true}},
	// codex starts its code-mode host from beside its own (resolved) binary.
	"codex": {npmName: "@openai/codex", versionSuffix: "-linux-x64",
		files: map[string]string{
			"package/vendor/x86_64-unknown-linux-musl/bin/codex":                "codex",
			"package/vendor/x86_64-unknown-linux-musl/bin/codex-code-mode-host": "codex-code-mode-host",
			"package/vendor/x86_64-unknown-linux-musl/codex-path/rg":            "rg",
		},
		commands: map[string]bool{"codex": true, "rg": true}},
}

// HarnessNames are the harnesses the image builder can install.
func HarnessNames() []string { return []string{"claude-code", "codex"} }

// HarnessDir is where a harness's files live in the image.
func HarnessDir(h Harness) string { return "/opt/bumper/" + h.Name + "-" + h.Version }

const (
	// maxHarnessTarball bounds a download; maxHarnessFile one file taken from it.
	maxHarnessTarball = 1 << 30
	maxHarnessFile    = 1 << 30
	// maxNPMMetadata bounds a version's manifest.
	maxNPMMetadata = 4 << 20
)

// check refuses a harness the builder does not know or a version that is not exact.
func (h Harness) check() error {
	if _, ok := harnessPackages[h.Name]; !ok {
		return fmt.Errorf("invalid image config: harness %q is not one of %s", h.Name, strings.Join(HarnessNames(), ", "))
	}
	if !release.IsExact(h.Version) {
		return fmt.Errorf("invalid image config: harness %s version %q is not one exact release (MAJOR.MINOR.PATCH)", h.Name, h.Version)
	}
	return nil
}

// harnessTarball is a verified tarball in the cache.
type harnessTarball struct {
	path      string
	integrity string // npm's "sha512-<base64>"
}

// fetchHarness returns the harness's tarball from the cache, or downloads it from the
// registry and checks it against the integrity the registry states for the version
// (what npm itself checks). Only the registry is reached, from the host, at build time:
// the VM never sees the registry.
func fetchHarness(ctx context.Context, cacheDir, registry string, h Harness, client *http.Client) (harnessTarball, error) {
	pkg := harnessPackages[h.Name]
	version := h.Version + pkg.versionSuffix
	dir := filepath.Join(cacheDir, "harness")
	base := strings.NewReplacer("@", "", "/", "-").Replace(pkg.npmName) + "-" + version
	sumFile := filepath.Join(dir, base+".integrity")
	// The cache is the host's (root's): a tarball in it was checked when it came in,
	// and hashing 170 MB again at every run would cost a second. It is named by its
	// integrity, so the integrity the version's file names is always its tarball's,
	// whatever concurrent fetches (which run outside the cache lock) did.
	if sum, err := os.ReadFile(sumFile); err == nil {
		integrity := strings.TrimSpace(string(sum))
		if tgz, ok := tarballPath(dir, base, integrity); ok {
			if _, err := os.Stat(tgz); err == nil {
				return harnessTarball{path: tgz, integrity: integrity}, nil
			}
		}
	}
	meta, err := npmVersion(ctx, client, registry, pkg.npmName, version)
	if err != nil {
		return harnessTarball{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return harnessTarball{}, fmt.Errorf("failed to create %s: %w", dir, err)
	}
	partial, err := os.CreateTemp(dir, base+".partial-")
	if err != nil {
		return harnessTarball{}, fmt.Errorf("failed to create a download file: %w", err)
	}
	defer os.Remove(partial.Name())
	err = download(ctx, client, meta.Dist.Tarball, partial)
	if cerr := partial.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return harnessTarball{}, fmt.Errorf("failed to download %s@%s: %w", pkg.npmName, version, err)
	}
	if err := checkIntegrity(partial.Name(), meta.Dist.Integrity); err != nil {
		return harnessTarball{}, fmt.Errorf("the tarball of %s@%s is refused: %w", pkg.npmName, version, err)
	}
	tgz, ok := tarballPath(dir, base, meta.Dist.Integrity)
	if !ok {
		return harnessTarball{}, fmt.Errorf("the tarball of %s@%s is refused: its integrity %q is not one SHA-512", pkg.npmName, version, meta.Dist.Integrity)
	}
	if err := os.Rename(partial.Name(), tgz); err != nil {
		return harnessTarball{}, fmt.Errorf("failed to keep the tarball: %w", err)
	}
	// Written whole or not at all: a concurrent fetch never reads half an integrity.
	if err := fsutil.WriteFileAtomic(sumFile, []byte(meta.Dist.Integrity+"\n"), 0o644); err != nil {
		return harnessTarball{}, fmt.Errorf("failed to record the tarball's integrity: %w", err)
	}
	return harnessTarball{path: tgz, integrity: meta.Dist.Integrity}, nil
}

// tarballPath is where the cache keeps the tarball whose integrity is npm's
// "sha512-<base64>": named by its digest; false when integrity is not one SHA-512.
func tarballPath(dir, base, integrity string) (string, bool) {
	b64, ok := strings.CutPrefix(integrity, "sha512-")
	if !ok {
		return "", false
	}
	sum, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(sum) != sha512.Size {
		return "", false
	}
	return filepath.Join(dir, base+"-"+hex.EncodeToString(sum)+".tgz"), true
}

// npmManifest is the part of a version's manifest the builder reads.
type npmManifest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Dist    struct {
		Tarball   string `json:"tarball"`
		Integrity string `json:"integrity"`
	} `json:"dist"`
}

// npmVersion reads one version's manifest from the registry (GET /<name>/<version>).
func npmVersion(ctx context.Context, client *http.Client, registry, name, version string) (*npmManifest, error) {
	u := strings.TrimRight(registry, "/") + "/" + strings.Replace(url.PathEscape(name), "%40", "@", 1) + "/" + url.PathEscape(version)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to ask the npm registry for %s@%s: %w", name, version, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to reach the npm registry %s for %s@%s: %w", registry, name, version, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("the npm registry %s has no %s@%s: check the harness version in .github/bumper.yml", registry, name, version)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the npm registry %s answered %s for %s@%s", registry, resp.Status, name, version)
	}
	var m npmManifest
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxNPMMetadata)).Decode(&m); err != nil {
		return nil, fmt.Errorf("failed to read the npm registry's manifest of %s@%s: %w", name, version, err)
	}
	if m.Name != name || m.Version != version {
		return nil, fmt.Errorf("the npm registry answered %s@%s when asked for %s@%s", m.Name, m.Version, name, version)
	}
	if !strings.HasPrefix(m.Dist.Integrity, "sha512-") {
		return nil, fmt.Errorf("the npm registry states no sha512 integrity for %s@%s (%q): refused", name, version, m.Dist.Integrity)
	}
	t, err := url.Parse(m.Dist.Tarball)
	if err != nil || (t.Scheme != "https" && t.Scheme != "http") || t.Host == "" {
		return nil, fmt.Errorf("the npm registry's tarball URL for %s@%s is not an http(s) URL: %q", name, version, m.Dist.Tarball)
	}
	return &m, nil
}

// download writes the body of a GET of u to w, at most maxHarnessTarball bytes.
func download(ctx context.Context, client *http.Client, u string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, maxHarnessTarball+1))
	if err != nil {
		return err
	}
	if n > maxHarnessTarball {
		return fmt.Errorf("%s is larger than %d bytes", u, maxHarnessTarball)
	}
	return nil
}

// checkIntegrity compares a file's SHA-512 with npm's "sha512-<base64>" integrity.
func checkIntegrity(file, integrity string) error {
	want, ok := strings.CutPrefix(integrity, "sha512-")
	if !ok {
		return fmt.Errorf("integrity %q is not sha512", integrity)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("its SHA-512 is %s, the registry says %s", got, want)
	}
	return nil
}

// installHarness unpacks the harness's files from its tarball under root's HarnessDir
// and links its commands into /usr/local/bin. Only the listed regular files are taken; an entry
// that is a link, a device or a path outside the package is never written.
func installHarness(root string, h Harness, tb harnessTarball) error {
	pkg := harnessPackages[h.Name]
	dir := filepath.Join(root, filepath.FromSlash(HarnessDir(h)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", HarnessDir(h), err)
	}
	f, err := os.Open(tb.path)
	if err != nil {
		return fmt.Errorf("failed to open the harness tarball: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("failed to read the harness tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	found := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("failed to read the harness tarball: %w", err)
		}
		name := path.Clean(hdr.Name)
		bin, wanted := pkg.files[name]
		if !wanted || found[name] {
			continue
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Size > maxHarnessFile {
			return fmt.Errorf("the harness tarball's %s is not a regular file of at most %d bytes", name, maxHarnessFile)
		}
		dst := filepath.Join(dir, bin)
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
		if err != nil {
			return fmt.Errorf("failed to install %s: %w", bin, err)
		}
		_, err = io.Copy(out, io.LimitReader(tr, hdr.Size))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("failed to install %s: %w", bin, err)
		}
		found[name] = true
		if !pkg.commands[bin] {
			continue
		}
		link := filepath.Join(root, "usr", "local", "bin", bin)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return fmt.Errorf("failed to create /usr/local/bin: %w", err)
		}
		if err := os.Symlink(path.Join(HarnessDir(h), bin), link); err != nil {
			return fmt.Errorf("failed to link %s into /usr/local/bin: %w", bin, err)
		}
	}
	for name := range pkg.files {
		if !found[name] {
			return fmt.Errorf("the harness tarball of %s %s has no %s: the package's layout changed; pin another version", h.Name, h.Version, name)
		}
	}
	return nil
}

// harnessClient is the HTTP client of registry downloads: the environment's proxy,
// the system's roots, and a bound on the whole download.
func harnessClient() *http.Client {
	return &http.Client{Timeout: 20 * time.Minute}
}
