package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/internal/cachedir"
)

// lockPrefix starts the name of a derivation's lock file in the images directory.
const lockPrefix = ".derive-lock-"

// lockPoll is how often a caller waiting for another derivation of the same key looks
// again.
const lockPoll = 250 * time.Millisecond

// LockDerivation takes the lock of the derivation with key in imagesDir, waiting while
// another process holds it (until ctx ends): callers that would run the same setup at
// once (several runs of one repository approved together) run it once, the others
// find its image after. The lock dies with the process that holds it, so a killed
// build never blocks the next. Call unlock when the image is derived (or not).
func LockDerivation(ctx context.Context, imagesDir, key string) (unlock func(), err error) {
	if !validDigest(key) {
		return nil, fmt.Errorf("failed to lock a derivation: key %q is not sha256:<64 hex digits>", key)
	}
	if err := os.MkdirAll(imagesDir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", imagesDir, err)
	}
	path := filepath.Join(imagesDir, lockPrefix+strings.TrimPrefix(key, "sha256:"))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("failed to open the derivation's lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// Its time is its last use: Prune removes the locks of keys long unused.
			now := time.Now()
			_ = os.Chtimes(path, now, now)
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("failed to lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("failed to derive an image: waiting for another derivation of it (%s): %w", path, context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// pruneLocks removes the derivation locks unused since cutoff that nobody holds.
func pruneLocks(imagesDir string, cutoff time.Time, dryRun bool) ([]cachedir.Removed, error) {
	paths, err := filepath.Glob(filepath.Join(imagesDir, lockPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("failed to list derivation locks: %w", err)
	}
	var out []cachedir.Removed
	var errs []error
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			out = append(out, cachedir.Removed{Path: p, LastUsed: info.ModTime(), Why: "the lock of a derivation unused since then"})
			if !dryRun {
				errs = append(errs, os.Remove(p))
			}
		}
		f.Close()
	}
	return out, errors.Join(errs...)
}
