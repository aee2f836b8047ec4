package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrune(t *testing.T) {
	old := time.Now().Add(-30 * 24 * time.Hour)
	cutoff := time.Now().Add(-14 * 24 * time.Hour)
	oldImage, newImage := strings.Repeat("a", 64), strings.Repeat("b", 64)
	// name → last used; a nil time means now.
	entries := map[string]time.Time{
		"images/" + oldImage: old,
		"images/" + newImage: {},
		"boot/oldkernel":     old,
		"rootfs/bookworm":    {},
		"tmp/assemble-dead":  {},
	}
	index := map[string]string{"key-old": oldImage, "key-new": newImage}

	for _, dryRun := range []bool{true, false} {
		cache := t.TempDir()
		for name, at := range entries {
			p := filepath.Join(cache, name)
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if !at.IsZero() {
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.MkdirAll(filepath.Join(cache, "images", ".index"), 0o755); err != nil {
			t.Fatal(err)
		}
		for key, digest := range index {
			if err := os.WriteFile(filepath.Join(cache, "images", ".index", key), []byte(digest+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		removed, err := Prune(cache, cutoff, dryRun)
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		var names []string
		for _, r := range removed {
			rel, _ := filepath.Rel(cache, r.Path)
			names = append(names, rel)
		}
		if len(names) != 2 || !strings.Contains(strings.Join(names, " "), "images/"+oldImage) || !strings.Contains(strings.Join(names, " "), "boot/oldkernel") {
			t.Fatalf("dry run %v: Prune listed %v, want the old image and the old boot files", dryRun, names)
		}
		want := map[string]bool{ // path → still there
			"images/" + oldImage: dryRun, "images/" + newImage: true, "boot/oldkernel": dryRun,
			"rootfs/bookworm": true, "tmp/assemble-dead": dryRun,
			"images/.index/key-old": dryRun, "images/.index/key-new": true,
		}
		for name, there := range want {
			if _, err := os.Stat(filepath.Join(cache, name)); (err == nil) != there {
				t.Errorf("dry run %v: %s exists = %v, want %v", dryRun, name, err == nil, there)
			}
		}
	}
}

func TestPruneMissingCache(t *testing.T) {
	removed, err := Prune(filepath.Join(t.TempDir(), "none"), time.Now(), false)
	if err != nil || len(removed) != 0 {
		t.Fatalf("Prune of a missing cache = %v, %v; want nothing", removed, err)
	}
}
