package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/cachedir"
)

// Prune removes from the cache at cacheDir the images (derived ones included), boot
// files and debootstrap trees that no build, run or FindDerived used since cutoff, index entries of removed images, and leftovers
// of interrupted work. It holds the cache lock, so no build runs meanwhile. With dryRun
// it only reports what it would remove.
func Prune(cacheDir string, cutoff time.Time, dryRun bool) ([]cachedir.Removed, error) {
	if _, err := os.Stat(cacheDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := lockCache(cacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []cachedir.Removed
	var errs []error
	for _, sub := range []string{"images", "boot", "rootfs"} {
		dir := filepath.Join(cacheDir, sub)
		rs, err := cachedir.Prune(dir, cutoff, nil, dryRun)
		out, errs = append(out, rs...), append(errs, err)
	}
	// Derived images are images like the others: kept by use, not by their parent, which
	// they do not need. A derivation still being staged after an hour was interrupted.
	hourAgo := time.Now().Add(-time.Hour)
	for _, stale := range []struct{ prefix, why string }{
		{derivePrefix, "left half-made by an interrupted derivation"},
		{rootDiskPrefix, "a root disk saved for a derivation that never happened"},
	} {
		staged, err := cachedir.PruneStale(ImagesDir(cacheDir), stale.prefix, hourAgo, stale.why, dryRun)
		out, errs = append(out, staged...), append(errs, err)
	}
	locks, err := pruneLocks(ImagesDir(cacheDir), cutoff, dryRun)
	out, errs = append(out, locks...), append(errs, err)
	// Builds hold the cache lock, and so does this: a build's staging directory now is
	// one a dead build left.
	dead, err := cachedir.PruneStale(ImagesDir(cacheDir), buildPrefix, time.Now(), "left by an interrupted image build", dryRun)
	out, errs = append(out, dead...), append(errs, err)
	if !dryRun {
		errs = append(errs, pruneIndex(ImagesDir(cacheDir)))
		// Holding the lock, anything in tmp is from a build that died.
		if _, err := os.Stat(filepath.Join(cacheDir, "tmp")); err == nil {
			errs = append(errs, emptyTmp(filepath.Join(cacheDir, "tmp")))
		}
	}
	return out, errors.Join(errs...)
}

// pruneIndex removes the index entries (input key → image digest) whose image is gone.
func pruneIndex(imagesDir string) error {
	index := filepath.Join(imagesDir, ".index")
	entries, err := os.ReadDir(index)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to list the image index: %w", err)
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(index, e.Name())
		digest, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(imagesDir, strings.TrimSpace(string(digest)))); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("failed to remove a stale index entry: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
