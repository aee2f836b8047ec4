package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunImage(t *testing.T) {
	runCLICases(t, []cliCase{
		{name: "listed in help", args: []string{"help"}, wantCode: 0, wantStdout: "image"},
		{name: "help for image", args: []string{"help", "image"}, wantCode: 0, wantStderr: "--packages"},
		{name: "no subcommand", args: []string{"image"}, wantCode: 2, wantStderr: "'bumper image prune [flags]'"},
		{name: "unknown subcommand", args: []string{"image", "push"}, wantCode: 2, wantStderr: "want 'bumper image build [flags]'"},
		{name: "prune: bad age", args: []string{"image", "prune", "--unused-for", "soon"}, wantCode: 2, wantStderr: "use days (14d) or a duration"},
		{name: "prune: negative days", args: []string{"image", "prune", "--unused-for", "-3d"}, wantCode: 2, wantStderr: "not a number of days"},
		{name: "prune: extra argument", args: []string{"image", "prune", "extra"}, wantCode: 2, wantStderr: "takes no arguments"},
		{name: "prune: empty cache", args: []string{"image", "prune", "--cache", "/nonexistent-bumper-cache"}, wantCode: 0, wantStdout: "removed 0 cache entries"},
		{name: "extra argument", args: []string{"image", "build", "extra"}, wantCode: 2, wantStderr: "takes no arguments"},
		{name: "bad flag", args: []string{"image", "build", "--nope"}, wantCode: 2, wantStderr: "bumper help image"},
		{name: "bad package name", args: []string{"image", "build", "--mirror", "http://deb.debian.org/debian", "--packages", "git,Bad Name"},
			wantCode: 1, wantStderr: `"Bad Name" is not a Debian package name`},
		{name: "bad mirror", args: []string{"image", "build", "--mirror", "file:///tmp"}, wantCode: 1, wantStderr: "not an http(s) URL"},
	})
}

// TestImagePrune prunes a cache with one stale image and one snapshot of a gone image, a
// dry run first.
func TestImagePrune(t *testing.T) {
	cache := t.TempDir()
	stale := filepath.Join(cache, "images", strings.Repeat("c", 64))
	snap := filepath.Join(cache, "snapshots", "0123")
	for _, d := range []string{stale, snap} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(snap, "meta.json"), []byte(`{"key":"0123","rootfs":"/nonexistent/rootfs.ext4"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-20 * 24 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	runCLICases(t, []cliCase{
		{name: "dry run", args: []string{"image", "prune", "--cache", cache, "--dry-run"}, wantStdout: "would remove 2 cache entries"},
		{name: "prune", args: []string{"image", "prune", "--cache", cache}, wantStdout: "removed " + snap + " (0.0 MiB; its image /nonexistent is gone)"},
		{name: "again", args: []string{"image", "prune", "--cache", cache, "--unused-for", "36h"}, wantStdout: "removed 0 cache entries"},
	})
	for _, d := range []string{stale, snap} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s is still there after prune", d)
		}
	}
}
