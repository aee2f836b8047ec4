package cachedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrune(t *testing.T) {
	now := time.Now()
	cutoff := now.Add(-24 * time.Hour)
	old := cutoff.Add(-time.Hour)
	tests := []struct {
		name     string
		dir      string
		lastUsed time.Time
		dead     bool // the Keep check gives a reason
		wantKept bool
		wantWhy  string
	}{
		{name: "recently used", dir: "a", lastUsed: now.Add(-time.Hour), wantKept: true},
		{name: "unused since the cutoff", dir: "b", lastUsed: old, wantWhy: "unused since"},
		{name: "recent but dead", dir: "c", lastUsed: now, dead: true, wantWhy: "dead"},
		{name: "dot entries are not entries", dir: ".index", lastUsed: old, wantKept: true},
		{name: "work in progress is not an entry", dir: ".tmp-x", lastUsed: old, wantKept: true},
		{name: "an interrupted prune is finished", dir: ".pruning-d", lastUsed: now, wantWhy: "interrupted prune"},
	}
	for _, dryRun := range []bool{true, false} {
		cache := t.TempDir()
		dead := map[string]bool{}
		for _, tt := range tests {
			p := filepath.Join(cache, tt.dir)
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "data"), make([]byte, 64<<10), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, tt.lastUsed, tt.lastUsed); err != nil {
				t.Fatal(err)
			}
			dead[p] = tt.dead
		}
		check := func(path string) string {
			if dead[path] {
				return "dead"
			}
			return ""
		}
		removed, err := Prune(cache, cutoff, check, dryRun)
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		got := map[string]Removed{}
		for _, r := range removed {
			got[filepath.Base(r.Path)] = r
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r, listed := got[tt.dir]
				if listed == tt.wantKept {
					t.Fatalf("dry run %v: %s listed = %v, want %v", dryRun, tt.dir, listed, !tt.wantKept)
				}
				if listed && (!strings.Contains(r.Why, tt.wantWhy) || r.Bytes < 64<<10) {
					t.Errorf("%s removed as %+v, want a reason with %q and at least 64 KiB freed", tt.dir, r, tt.wantWhy)
				}
				_, err := os.Stat(filepath.Join(cache, tt.dir))
				if exists := err == nil; exists != (tt.wantKept || dryRun) {
					t.Errorf("dry run %v: %s exists = %v", dryRun, tt.dir, exists)
				}
			})
		}
	}
}

func TestFreedBytesLeavesSharedFilesOut(t *testing.T) {
	dir := t.TempDir()
	entry := filepath.Join(dir, "entry")
	if err := os.Mkdir(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	own, shared := filepath.Join(entry, "own"), filepath.Join(entry, "shared")
	for _, f := range []string{own, shared} {
		if err := os.WriteFile(f, make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A second link, as the boot cache keeps for an image's kernel.
	if err := os.Link(shared, filepath.Join(dir, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	got := freedBytes(entry)
	if got < 1<<20 || got >= 2<<20 {
		t.Errorf("freedBytes = %d, want the unshared MiB only", got)
	}
}

func TestPruneStale(t *testing.T) {
	dir := t.TempDir()
	for name, age := range map[string]time.Duration{".tmp-old": 2 * time.Hour, ".tmp-new": time.Minute, "kept-old": 2 * time.Hour} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := PruneStale(dir, ".tmp-", time.Now().Add(-time.Hour), "stale", false)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0].Path) != ".tmp-old" || removed[0].Why != "stale" {
		t.Fatalf("PruneStale = %+v, %v; want only .tmp-old", removed, err)
	}
	for name, want := range map[string]bool{".tmp-old": false, ".tmp-new": true, "kept-old": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", name, err == nil, want)
		}
	}
}

func TestPruneMissingDir(t *testing.T) {
	removed, err := Prune(filepath.Join(t.TempDir(), "none"), time.Now(), nil, false)
	if err != nil || len(removed) != 0 {
		t.Fatalf("Prune of a missing cache = %v, %v; want nothing", removed, err)
	}
}

func TestMarkUsed(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if err := MarkUsed(dir); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dir)
	if err != nil || time.Since(info.ModTime()) > time.Minute {
		t.Fatalf("after MarkUsed the entry was last used %v (%v), want now", info.ModTime(), err)
	}
	if err := MarkUsed(filepath.Join(dir, "missing")); err == nil {
		t.Error("MarkUsed of a missing entry succeeded, want an error")
	}
}
