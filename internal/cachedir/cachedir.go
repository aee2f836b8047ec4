// Package cachedir keeps Bumper's on-disk caches (images, boot files, debootstrap trees,
// snapshots) from growing without bound: each entry is a directory whose modification
// time says when it was last used, and Prune removes the entries nobody used since a
// cutoff.
package cachedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// pruningPrefix marks an entry being deleted; Prune finishes what an interrupted prune
// left.
const pruningPrefix = ".pruning-"

// Removed describes one pruned (or, in a dry run, prunable) cache entry.
type Removed struct {
	// Path is the entry's directory.
	Path string
	// Bytes is the disk space removing it frees: the allocated blocks of its files that
	// have no other hard link (images share their kernel and initramfs with the boot
	// cache, so those are not counted).
	Bytes int64
	// LastUsed is the entry's modification time.
	LastUsed time.Time
	// Why says why it goes.
	Why string
}

// MarkUsed records that the entry dir was used now.
func MarkUsed(dir string) error {
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		return fmt.Errorf("failed to mark cache entry %s as used: %w", dir, err)
	}
	return nil
}

// Keep decides, for an entry not yet too old, whether it must go anyway; it returns a
// reason to remove it, or "" to keep it.
type Keep func(path string) string

// Prune removes the subdirectories of dir last used before cutoff, and those check (if
// not nil) gives a reason to remove. Entries whose names start with "." are left alone
// (they are in-progress work or indexes). With dryRun nothing is removed. A missing dir
// is an empty cache.
func Prune(dir string, cutoff time.Time, check Keep, dryRun bool) ([]Removed, error) {
	return PruneWith(dir, func(path string, lastUsed time.Time) string {
		if lastUsed.Before(cutoff) {
			return "unused since " + lastUsed.UTC().Format(time.RFC3339)
		}
		if check != nil {
			return check(path)
		}
		return ""
	}, dryRun)
}

// Reason decides whether the entry at path, last used at lastUsed, goes: it returns why,
// or "" to keep it.
type Reason func(path string, lastUsed time.Time) string

// PruneWith removes the subdirectories of dir that reason gives a reason for, in name
// order. Like Prune, it leaves entries whose names start with "." alone, finishes what
// an interrupted prune left, and removes nothing with dryRun.
func PruneWith(dir string, reason Reason, dryRun bool) ([]Removed, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list cache %s: %w", dir, err)
	}
	var paths []string
	for _, e := range entries {
		switch {
		case !e.IsDir():
		case strings.HasPrefix(e.Name(), pruningPrefix):
			paths = append(paths, filepath.Join(dir, e.Name())) // an interrupted prune's
		case e.Name()[0] != '.':
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return removeEach(paths, dryRun, func(path string, lastUsed time.Time) string {
		if strings.HasPrefix(filepath.Base(path), pruningPrefix) {
			return "left by an interrupted prune"
		}
		return reason(path, lastUsed)
	})
}

// PruneStale removes the subdirectories of dir whose names start with prefix and that
// were last modified before cutoff (leftovers of work that died half-way, or entries
// set aside), giving why as the reason.
func PruneStale(dir, prefix string, cutoff time.Time, why string, dryRun bool) ([]Removed, error) {
	paths, err := filepath.Glob(filepath.Join(dir, prefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("failed to list %s: %w", dir, err)
	}
	return removeEach(paths, dryRun, func(_ string, lastUsed time.Time) string {
		if lastUsed.Before(cutoff) {
			return why
		}
		return ""
	})
}

// removeEach removes, in the order given, the directories among paths that reason gives
// a reason for. Both callers list paths in name order, so the result is sorted by path.
func removeEach(paths []string, dryRun bool, reason func(path string, lastUsed time.Time) string) ([]Removed, error) {
	var out []Removed
	var errs []error
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil || !info.IsDir() {
			continue // removed meanwhile, or not an entry
		}
		why := reason(path, info.ModTime())
		if why == "" {
			continue
		}
		r, err := remove(path, info.ModTime(), why, dryRun)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// remove measures an entry and deletes it unless dryRun. It first renames the entry so
// that a reader never sees it half-deleted.
func remove(path string, lastUsed time.Time, why string, dryRun bool) (Removed, error) {
	r := Removed{Path: path, Bytes: freedBytes(path), LastUsed: lastUsed, Why: why}
	if dryRun {
		return r, nil
	}
	doomed := path
	if !strings.HasPrefix(filepath.Base(path), pruningPrefix) {
		doomed = filepath.Join(filepath.Dir(path), pruningPrefix+filepath.Base(path))
		if err := os.Rename(path, doomed); err != nil {
			return r, fmt.Errorf("failed to prune %s: %w", path, err)
		}
	}
	if err := os.RemoveAll(doomed); err != nil {
		return r, fmt.Errorf("failed to prune %s: %w", path, err)
	}
	return r, nil
}

// freedBytes sums the allocated size of the files under path that have no other link.
func freedBytes(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && (d.IsDir() || st.Nlink == 1) {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// Total is the space the entries free.
func Total(rs []Removed) int64 {
	var n int64
	for _, r := range rs {
		n += r.Bytes
	}
	return n
}
