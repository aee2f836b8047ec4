package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/sandbox/image"
)

// Automatic pruning: at most once a day, a run removes the cache entries nobody used for
// a month, so that each bumper version's image and snapshots do not stay forever.
const (
	AutoPruneEvery = 24 * time.Hour
	AutoPruneAge   = 30 * 24 * time.Hour
	// AutoPruneStamp, in the cache, is touched by each automatic prune.
	AutoPruneStamp = ".last-prune"
)

// SnapshotsDir is where runs keep warm-start snapshots in a cache: beside the images
// they are made from.
func SnapshotsDir(cache string) string { return filepath.Join(cache, "snapshots") }

// PruneCache prunes a cache as bumper lays it out: images, boot files and debootstrap
// trees (image.Prune), and the snapshots in SnapshotsDir (PruneSnapshots).
func PruneCache(cache string, cutoff time.Time, dryRun bool) ([]cachedir.Removed, error) {
	removed, err := image.Prune(cache, cutoff, dryRun)
	snaps, serr := PruneSnapshots(SnapshotsDir(cache), cutoff, dryRun)
	return append(removed, snaps...), errors.Join(err, serr)
}

// AutoPrune prunes entries unused for AutoPruneAge when the last automatic prune of the
// cache is over AutoPruneEvery old, and does nothing otherwise (nor for a cache it
// cannot write).
func AutoPrune(cache string) ([]cachedir.Removed, error) {
	stamp := filepath.Join(cache, AutoPruneStamp)
	if info, err := os.Stat(stamp); err == nil && time.Since(info.ModTime()) < AutoPruneEvery {
		return nil, nil
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		return nil, nil // a read-only or missing cache has nothing to prune
	}
	return PruneCache(cache, time.Now().Add(-AutoPruneAge), false)
}
