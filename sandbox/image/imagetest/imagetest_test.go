package imagetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrune(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name     string
		dir      string
		lastUsed time.Time
		wantKept bool
	}{
		{name: "recently used image", dir: strings.Repeat("a", 64), lastUsed: now.Add(-time.Hour), wantKept: true},
		{name: "stale image", dir: strings.Repeat("b", 64), lastUsed: now.Add(-PruneAfter - time.Hour)},
		{name: "stale index is not an image", dir: ".index", lastUsed: now.Add(-PruneAfter - time.Hour), wantKept: true},
		{name: "stale build staging is not an image", dir: ".build-123", lastUsed: now.Add(-PruneAfter - time.Hour), wantKept: true},
	}
	images := t.TempDir()
	for _, tt := range tests {
		p := filepath.Join(images, tt.dir)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, tt.lastUsed, tt.lastUsed); err != nil {
			t.Fatal(err)
		}
	}
	prune(t, images, now.Add(-PruneAfter))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := os.Stat(filepath.Join(images, tt.dir))
			if kept := err == nil; kept != tt.wantKept {
				t.Errorf("%s kept = %v, want %v", tt.dir, kept, tt.wantKept)
			}
		})
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv(CacheEnv, "")
	if got := CacheDir(); got != DefaultCacheDir {
		t.Errorf("CacheDir() = %q with %s unset, want %q", got, CacheEnv, DefaultCacheDir)
	}
	t.Setenv(CacheEnv, "/srv/cache")
	if got := CacheDir(); got != "/srv/cache" {
		t.Errorf("CacheDir() = %q, want the %s value", got, CacheEnv)
	}
}
