package image

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

func TestBuildConfigDefaults(t *testing.T) {
	tests := []struct {
		name    string
		cfg     BuildConfig
		check   func(t *testing.T, c BuildConfig)
		wantErr string
	}{
		{name: "defaults", cfg: BuildConfig{AgentBinary: "/x", Mirror: "http://deb.debian.org/debian/"}, check: func(t *testing.T, c BuildConfig) {
			if c.CacheDir != DefaultCacheDir || c.OutDir != DefaultCacheDir+"/images" || c.Suite != "bookworm" ||
				c.KernelPackage != "linux-image-amd64" || c.Headroom != DefaultHeadroom || c.Mirror != "http://deb.debian.org/debian" {
				t.Errorf("defaults not applied: %+v", c)
			}
			if !slices.Equal(c.Packages, []string{"ca-certificates", "git"}) {
				t.Errorf("packages = %v, want the base packages", c.Packages)
			}
		}},
		{name: "packages sorted and deduplicated", cfg: BuildConfig{AgentBinary: "/x", Mirror: "http://m/debian", Packages: []string{"nodejs", " git", "", "nodejs", "build-essential"}},
			check: func(t *testing.T, c BuildConfig) {
				if want := []string{"build-essential", "ca-certificates", "git", "nodejs"}; !slices.Equal(c.Packages, want) {
					t.Errorf("packages = %v, want %v", c.Packages, want)
				}
			}},
		{name: "bad package name", cfg: BuildConfig{AgentBinary: "/x", Mirror: "http://m", Packages: []string{"git;rm -rf /"}}, wantErr: "is not a Debian package name"},
		{name: "upper case package", cfg: BuildConfig{AgentBinary: "/x", Mirror: "http://m", Packages: []string{"NodeJS"}}, wantErr: "is not a Debian package name"},
		{name: "bad suite", cfg: BuildConfig{AgentBinary: "/x", Mirror: "http://m", Suite: "../etc"}, wantErr: "is not a Debian suite name"},
		{name: "bad mirror", cfg: BuildConfig{AgentBinary: "/x", Mirror: "ftp://m"}, wantErr: "is not an http(s) URL"},
		{name: "negative headroom", cfg: BuildConfig{AgentBinary: "/x", Mirror: "http://m", Headroom: -1}, wantErr: "negative"},
		{name: "no agent", cfg: BuildConfig{Mirror: "http://m"}, wantErr: "no agent binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestCheckAgent(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "missing", path: filepath.Join(dir, "nope"), wantErr: "invalid agent binary"},
		{name: "not ELF", path: notELF, wantErr: "built for linux/amd64"},
		{name: "dynamically linked", path: "/bin/sh", wantErr: "CGO_ENABLED=0"},
		{name: "static", path: "/bin/busybox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantErr == "" {
				if out, err := exec.Command("file", "-L", tt.path).Output(); err != nil || !strings.Contains(string(out), "statically linked") {
					t.Skipf("%s is not a static binary here (install busybox-static)", tt.path)
				}
			}
			sum, err := checkAgent(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(sum) != 64 {
				t.Fatalf("checkAgent = %q, %v; want a SHA-256", sum, err)
			}
		})
	}
}

func TestHostMirror(t *testing.T) {
	const deb822 = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
`
	tests := []struct {
		name    string
		files   map[string]string
		suite   string
		want    string
		wantErr string
	}{
		{name: "deb822", files: map[string]string{"sources.list.d/debian.sources": deb822}, suite: "bookworm", want: "http://deb.debian.org/debian"},
		{name: "security suite", files: map[string]string{"sources.list.d/debian.sources": deb822}, suite: "bookworm-security", want: "http://deb.debian.org/debian-security"},
		{name: "one-line with options", files: map[string]string{"sources.list": "# comment\ndeb-src http://src/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib\n"},
			suite: "bookworm", want: "http://mirror.example/debian"},
		{name: "sources.list first", files: map[string]string{"sources.list": "deb http://first/debian bookworm main\n", "sources.list.d/debian.sources": deb822},
			suite: "bookworm", want: "http://first/debian"},
		{name: "disabled stanza", files: map[string]string{"sources.list.d/a.sources": "Enabled: no\nTypes: deb\nURIs: http://off/debian\nSuites: bookworm\nComponents: main\n"},
			suite: "bookworm", wantErr: "pass one explicitly"},
		{name: "no main component", files: map[string]string{"sources.list": "deb http://m/debian bookworm contrib\n"}, suite: "bookworm", wantErr: "--mirror"},
		{name: "other suite only", files: map[string]string{"sources.list.d/debian.sources": deb822}, suite: "trixie", wantErr: "suite trixie"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := hostMirror(tt.suite, dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("hostMirror = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestBuildCacheHit checks that Build returns an image already recorded for identical
// inputs without doing any build step: no download, debootstrap or temporary directory.
func TestBuildCacheHit(t *testing.T) {
	testgate.Command(t, "apt-cache", "apt")
	testgate.Command(t, "busybox", "busybox-static")
	ctx := context.Background()
	cacheDir := t.TempDir()
	cfg := BuildConfig{CacheDir: cacheDir, AgentBinary: "/bin/busybox", Mirror: "http://deb.debian.org/debian", Packages: []string{"nodejs"}}
	full, in, err := plan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir, m := writeFakeImage(t, full.OutDir)
	if err := os.MkdirAll(filepath.Join(full.OutDir, ".index"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full.OutDir, ".index", in.key()), []byte(digestHex(m.Digest)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("identical inputs reuse the image", func(t *testing.T) {
		var progress bytes.Buffer
		cfg := cfg
		cfg.Progress = &progress
		im, err := Build(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if im.Dir() != dir || im.Manifest().Digest != m.Digest {
			t.Errorf("Build returned %s (%s), want the cached %s (%s)", im.Dir(), im.Manifest().Digest, dir, m.Digest)
		}
		if !strings.Contains(progress.String(), "cached, nothing to do") {
			t.Errorf("progress does not say the image was cached:\n%s", progress.String())
		}
		entries, err := os.ReadDir(cacheDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			// The remembered apt resolution is the one file a hit may leave.
			if e.Name() != "images" && e.Name() != resolvedFile {
				t.Errorf("a cache hit created %s in the cache", e.Name())
			}
		}
	})

	t.Run("changed packages miss the cache", func(t *testing.T) {
		_, other, err := plan(ctx, BuildConfig{CacheDir: cacheDir, AgentBinary: "/bin/busybox", Mirror: "http://deb.debian.org/debian"})
		if err != nil {
			t.Fatal(err)
		}
		if other.key() == in.key() {
			t.Fatal("a different package list gave the same input key")
		}
		if _, err := lookup(full.OutDir, other.key()); err == nil {
			t.Error("lookup found an image for inputs never built")
		}
	})

	t.Run("damaged cached image is not returned", func(t *testing.T) {
		writeAt(t, filepath.Join(dir, RootfsFile), 0, []byte("x"))
		if _, err := lookup(full.OutDir, in.key()); err == nil || !strings.Contains(err.Error(), "SHA-256") {
			t.Fatalf("lookup of a damaged image: error = %v, want a SHA-256 mismatch", err)
		}
	})
}
