package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPruneSnapshots(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(t.TempDir(), "rootfs.ext4")
	if err := os.WriteFile(rootfs, []byte("image"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	tests := []struct {
		name     string
		rootfs   string // in meta.json; "-" writes no meta
		age      time.Duration
		wantKept bool
		wantWhy  string
	}{
		{name: "live", rootfs: rootfs, wantKept: true},
		{name: "dead", rootfs: filepath.Join(t.TempDir(), "gone.ext4"), wantWhy: "is gone"},
		{name: "unused", rootfs: rootfs, age: time.Since(old), wantWhy: "unused since"},
		{name: "legacy", rootfs: "", wantKept: true},
		{name: ".tmp-crashed", rootfs: "-", age: 2 * time.Hour, wantWhy: "interrupted"},
		{name: ".broken-abc-20261101T000000", rootfs: "-", age: 8 * 24 * time.Hour, wantWhy: "failed to restore"},
		{name: ".broken-def-20261128T000000", rootfs: "-", age: 24 * time.Hour, wantKept: true},
		{name: ".tmp-in-progress", rootfs: "-", age: time.Minute, wantKept: true},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if tt.rootfs != "-" {
			b, _ := json.Marshal(snapshot{Key: tt.name, Rootfs: tt.rootfs})
			if err := os.WriteFile(filepath.Join(p, snapshotMeta), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		at := time.Now().Add(-tt.age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := PruneSnapshots(dir, time.Now().Add(-30*24*time.Hour), false)
	if err != nil {
		t.Fatalf("PruneSnapshots: %v", err)
	}
	why := map[string]string{}
	for _, r := range removed {
		why[filepath.Base(r.Path)] = r.Why
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, gone := why[tt.name]
			if gone == tt.wantKept || !strings.Contains(w, tt.wantWhy) {
				t.Errorf("removed = %v (%q), want removed = %v with %q", gone, w, !tt.wantKept, tt.wantWhy)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.name)); (err == nil) != tt.wantKept {
				t.Errorf("exists = %v, want %v", err == nil, tt.wantKept)
			}
		})
	}
}

// TestFindSnapshotMarksUse checks that restoring a snapshot counts as using it, so
// pruning keeps snapshots that serve runs.
func TestFindSnapshotMarksUse(t *testing.T) {
	files := t.TempDir()
	cfg := Config{CPUs: 2, MemoryMB: 1024}
	for name, f := range map[string]*string{"vmlinux": &cfg.Kernel, "initrd.img": &cfg.Initrd, "rootfs.ext4": &cfg.Rootfs, "qemu": &cfg.QEMU} {
		*f = filepath.Join(files, name)
		if err := os.WriteFile(*f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := qemuLayout{cfg: cfg, accel: AccelTCG, fixedDisks: true}
	key, err := snapshotKey(l)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sd := filepath.Join(dir, key)
	if err := os.Mkdir(sd, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{snapshotRoot, snapshotState, snapshotOverlay} {
		if err := os.WriteFile(filepath.Join(sd, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(snapshot{Key: key, Rootfs: cfg.Rootfs})
	if err := os.WriteFile(filepath.Join(sd, snapshotMeta), b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(sd, old, old); err != nil {
		t.Fatal(err)
	}
	if s, why := findSnapshot(dir, l); s == nil {
		t.Fatalf("findSnapshot found nothing: %s", why)
	}
	info, err := os.Stat(sd)
	if err != nil || time.Since(info.ModTime()) > time.Minute {
		t.Errorf("snapshot last used %v after a restore found it, want now", info.ModTime())
	}
}
