package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockDerivation: a second build of the same environment waits for the first (the lock
// is held across processes by flock; two opens in one process are two holders too), a
// build of another environment does not, and a waiting build gives up when its run's
// context ends, saying what it waited for.
func TestLockDerivation(t *testing.T) {
	dir := t.TempDir()
	key, other := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	unlock, err := LockDerivation(context.Background(), dir, key)
	if err != nil {
		t.Fatal(err)
	}
	unlockOther, err := LockDerivation(context.Background(), dir, other)
	if err != nil {
		t.Fatalf("another environment waited: %v", err)
	}
	unlockOther()

	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPoll)
	defer cancel()
	if _, err := LockDerivation(ctx, dir, key); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for another derivation") {
		t.Fatalf("a second lock while the first is held: %v", err)
	}

	got := make(chan error, 1)
	go func() {
		u, err := LockDerivation(context.Background(), dir, key)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the second build did not wait: %v", err)
	case <-time.After(2 * lockPoll):
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("the second build after the first: %v", err)
	}
}

// TestPruneLocks: Prune removes the locks of derivations unused since its cutoff, but
// never one a build holds now, nor a recent one.
func TestPruneLocks(t *testing.T) {
	cache := t.TempDir()
	images := ImagesDir(cache)
	keys := map[string]string{"old": "sha256:" + strings.Repeat("1", 64), "held": "sha256:" + strings.Repeat("2", 64), "new": "sha256:" + strings.Repeat("3", 64)}
	var holding func()
	for name, key := range keys {
		unlock, err := LockDerivation(context.Background(), images, key)
		if err != nil {
			t.Fatal(err)
		}
		if name == "held" {
			holding = unlock
		} else {
			unlock()
		}
	}
	defer holding()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, name := range []string{"old", "held"} {
		p := filepath.Join(images, lockPrefix+strings.TrimPrefix(keys[name], "sha256:"))
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Prune(cache, time.Now().Add(-14*24*time.Hour), false)
	if err != nil || len(removed) != 1 || !strings.HasSuffix(removed[0].Path, strings.Repeat("1", 64)) {
		t.Fatalf("Prune = %+v, %v; want the old unheld lock alone", removed, err)
	}
	for name, there := range map[string]bool{"old": false, "held": true, "new": true} {
		if _, err := os.Stat(filepath.Join(images, lockPrefix+strings.TrimPrefix(keys[name], "sha256:"))); (err == nil) != there {
			t.Errorf("the %s lock exists = %v, want %v", name, err == nil, there)
		}
	}
}
