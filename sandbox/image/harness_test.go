package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// tarEntry is one entry of a fake npm tarball.
type tarEntry struct {
	name, content, link string
	typ                 byte
}

func fakeTarball(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Mode: 0o755, Typeflag: typ, Linkname: e.link}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.content))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func integrityOf(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// fakeRegistry serves one version's manifest and tarball the way registry.npmjs.org
// does; manifest can be changed to lie. It counts tarball downloads.
type fakeRegistry struct {
	*httptest.Server
	tarball   []byte
	manifest  func(m *npmManifest)
	downloads atomic.Int32
}

func newFakeRegistry(t *testing.T, name, version string, tarball []byte) *fakeRegistry {
	r := &fakeRegistry{tarball: tarball}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.EscapedPath() {
		case "/" + strings.Replace(name, "/", "%2F", 1) + "/" + version:
			m := npmManifest{Name: name, Version: version}
			m.Dist.Tarball = r.URL + "/tarball.tgz"
			m.Dist.Integrity = integrityOf(r.tarball)
			if r.manifest != nil {
				r.manifest(&m)
			}
			_ = json.NewEncoder(w).Encode(m)
		case "/tarball.tgz":
			r.downloads.Add(1)
			_, _ = w.Write(r.tarball)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func TestFetchHarness(t *testing.T) {
	good := fakeTarball(t, []tarEntry{{name: "package/claude", content: "#!/bin/sh\necho claude\n"}})
	h := Harness{Name: "claude-code", Version: "2.1.328"}
	tests := []struct {
		name     string
		manifest func(m *npmManifest)
		tarball  []byte
		version  string
		want     string
	}{
		{name: "a verified tarball"},
		{name: "the registry has another version than pinned", version: "9.9.9", want: "has no @anthropic-ai/claude-code-linux-x64@2.1.328"},
		{name: "the tarball does not match its integrity", tarball: fakeTarball(t, []tarEntry{{name: "package/claude", content: "evil"}}),
			manifest: func(m *npmManifest) { m.Dist.Integrity = integrityOf(good) }, want: "SHA-512"},
		{name: "no sha512 integrity", manifest: func(m *npmManifest) { m.Dist.Integrity = "sha1-abc" }, want: "no sha512 integrity"},
		{name: "another package answered", manifest: func(m *npmManifest) { m.Name = "@evil/claude" }, want: "answered @evil/claude"},
		{name: "a tarball URL that is not http", manifest: func(m *npmManifest) { m.Dist.Tarball = "file:///etc/passwd" }, want: "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version := h.Version
			if tt.version != "" {
				version = tt.version
			}
			tarball := good
			if tt.tarball != nil {
				tarball = tt.tarball
			}
			reg := newFakeRegistry(t, "@anthropic-ai/claude-code-linux-x64", version, tarball)
			reg.manifest = tt.manifest
			cache := t.TempDir()
			got, err := fetchHarness(context.Background(), cache, reg.URL, h, reg.Client())
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("fetchHarness = %v, want %q", err, tt.want)
				}
				if left, _ := filepath.Glob(filepath.Join(cache, "harness", "*")); len(left) != 0 {
					t.Fatalf("a refused download left %v", left)
				}
				return
			}
			if err != nil || got.integrity != integrityOf(good) {
				t.Fatalf("fetchHarness = %+v, %v", got, err)
			}
			again, err := fetchHarness(context.Background(), cache, reg.URL, h, reg.Client())
			if err != nil || again != got || reg.downloads.Load() != 1 {
				t.Fatalf("a second fetch: %+v, %v, %d downloads", again, err, reg.downloads.Load())
			}
		})
	}
}

// TestInstallHarness: only the package's listed regular files are installed, each
// linked into /usr/local/bin; a tarball whose binary is a link or missing, or that
// carries paths out of the package, installs nothing outside the harness's directory.
func TestInstallHarness(t *testing.T) {
	codex := Harness{Name: "codex", Version: "0.171.0"}
	bin := "package/vendor/x86_64-unknown-linux-musl/bin/codex"
	rg := "package/vendor/x86_64-unknown-linux-musl/codex-path/rg"
	host := "package/vendor/x86_64-unknown-linux-musl/bin/codex-code-mode-host"
	tests := []struct {
		name    string
		entries []tarEntry
		want    string
	}{
		{name: "the binary, its host and rg", entries: []tarEntry{{name: bin, content: "codex"}, {name: host, content: "host"}, {name: rg, content: "rg"}, {name: "package/README.md", content: "x"}}},
		{name: "paths out of the package are never written", entries: []tarEntry{
			{name: "../../etc/passwd", content: "root::0:0"}, {name: "/etc/shadow", content: "x"}, {name: bin, content: "codex"}, {name: host, content: "host"}, {name: rg, content: "rg"}}},
		{name: "the binary is a link", entries: []tarEntry{{name: bin, typ: tar.TypeSymlink, link: "/etc/passwd"}, {name: host, content: "host"}, {name: rg, content: "rg"}}, want: "not a regular file"},
		{name: "the binary is missing", entries: []tarEntry{{name: host, content: "host"}, {name: rg, content: "rg"}}, want: "has no " + bin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tgz := filepath.Join(dir, "h.tgz")
			if err := os.WriteFile(tgz, fakeTarball(t, tt.entries), 0o644); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, "root")
			err := installHarness(root, codex, harnessTarball{path: tgz})
			if _, serr := os.Stat(filepath.Join(dir, "etc")); serr == nil {
				t.Fatal("an entry was written outside the root")
			}
			if _, serr := os.Stat(filepath.Join(root, "etc")); serr == nil {
				t.Fatal("an entry was written outside the harness's directory")
			}
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("installHarness = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{"codex": "codex", "rg": "rg"} {
				// The link is the guest's path: follow it inside root.
				link, _ := os.Readlink(filepath.Join(root, "usr", "local", "bin", name))
				got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(link)))
				if err != nil || string(got) != content || link != HarnessDir(codex)+"/"+name {
					t.Fatalf("%s: %q, link %q, %v", name, got, link, err)
				}
			}
			if entries, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(HarnessDir(codex)))); len(entries) != 3 {
				t.Fatalf("the harness's directory holds %d entries, want the three listed files", len(entries))
			}
			// The code-mode host stays beside codex, not on PATH.
			if _, err := os.Lstat(filepath.Join(root, "usr", "local", "bin", "codex-code-mode-host")); err == nil {
				t.Fatal("codex-code-mode-host is on PATH")
			}
		})
	}
}

func TestHarnessCheck(t *testing.T) {
	for _, tt := range []struct {
		h    Harness
		want string
	}{
		{Harness{Name: "claude-code", Version: "2.1.328"}, ""},
		{Harness{Name: "codex", Version: "0.171.0"}, ""},
		{Harness{Name: "aider", Version: "1.0.0"}, "not one of"},
		{Harness{Name: "codex", Version: "0.172.0-alpha.1"}, ""},
		{Harness{Name: "codex", Version: "latest"}, "not one exact"},
		{Harness{Name: "codex", Version: "0.171"}, "not one exact"},
		{Harness{Name: "codex", Version: "^0.171.0"}, "not one exact"},
		{Harness{Name: "codex", Version: "0.171.0/../../x"}, "not one exact"},
	} {
		err := tt.h.check()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.h, err, tt.want)
		}
	}
}

// TestHarnessCacheNeverMismatched: fetches run outside the cache lock (plan), so runs
// approved together fetch one harness at once. The cache must never pair an integrity
// with a tarball it does not describe: a half-written integrity file (another fetch
// writing it), or an integrity file beside a tarball another fetch renamed over the
// first (a registry or mirror that answered the two differently). Either way the image
// would be keyed and recorded with one integrity and carry another tarball; the fetch
// goes to the registry again instead.
func TestHarnessCacheNeverMismatched(t *testing.T) {
	good := fakeTarball(t, []tarEntry{{name: "package/claude", content: "#!/bin/sh\necho claude\n"}})
	evil := fakeTarball(t, []tarEntry{{name: "package/claude", content: "#!/bin/sh\necho evil\n"}})
	h := Harness{Name: "claude-code", Version: "2.1.328"}
	base := "anthropic-ai-claude-code-linux-x64-2.1.328"
	for _, tt := range []struct {
		name      string
		integrity string
		tarball   []byte
	}{
		{"an integrity file cut short", "", good},
		{"an integrity file cut inside its digest", integrityOf(good)[:40], good},
		{"another fetch's tarball beside this integrity", integrityOf(good), evil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := newFakeRegistry(t, "@anthropic-ai/claude-code-linux-x64", h.Version, good)
			dir := filepath.Join(t.TempDir(), "harness")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// Every name a tarball of this version has had in the cache.
			for _, name := range []string{base + ".tgz", base + "-" + strings.Repeat("0", 128) + ".tgz"} {
				if err := os.WriteFile(filepath.Join(dir, name), tt.tarball, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, base+".integrity"), []byte(tt.integrity), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := fetchHarness(context.Background(), filepath.Dir(dir), reg.URL, h, reg.Client())
			if err != nil {
				t.Fatal(err)
			}
			if err := checkIntegrity(got.path, got.integrity); err != nil || got.integrity != integrityOf(good) {
				t.Fatalf("the cache gave %s with integrity %q: %v", got.path, got.integrity, err)
			}
			if reg.downloads.Load() != 1 {
				t.Fatalf("%d downloads, want the registry asked again", reg.downloads.Load())
			}
		})
	}
}
