package image

import (
	"encoding/json"
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
// of interrupted work. An image stays, however old, while an image derived from it as a
// delta stays (its root disk reads the parent's); a delta whose parent is gone can never
// boot and goes, whatever its age. It holds the cache lock, so no build runs meanwhile.
// With dryRun it only reports what it would remove.
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
	rs, err := cachedir.PruneWith(ImagesDir(cacheDir), imageReasons(ImagesDir(cacheDir), cutoff), dryRun)
	out, errs = append(out, rs...), append(errs, err)
	for _, sub := range []string{"boot", "rootfs"} {
		dir := filepath.Join(cacheDir, sub)
		rs, err := cachedir.Prune(dir, cutoff, nil, dryRun)
		out, errs = append(out, rs...), append(errs, err)
	}
	// A derivation still being staged after an hour was interrupted.
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

// imageReasons decides, for each image directory in imagesDir, whether Prune removes
// it: an image unused since cutoff goes unless an image that stays is derived from it
// (directly or through other parents) as a delta, and a delta whose chain of parents
// misses one goes whatever its age. Directories without a readable manifest are
// judged by age alone, as before. It reads the manifests once, up front, under the
// cache lock; it verifies no file (Load does, before any boot).
func imageReasons(imagesDir string, cutoff time.Time) cachedir.Reason {
	type node struct {
		parent string // the parent's directory name, for a delta only
		used   time.Time
	}
	nodes := map[string]node{}
	entries, _ := os.ReadDir(imagesDir)
	for _, e := range entries {
		if !e.IsDir() || e.Name()[0] == '.' {
			continue
		}
		dir := filepath.Join(imagesDir, e.Name())
		info, err := os.Stat(dir)
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		if err != nil {
			continue
		}
		var m struct {
			Parent string `json:"parent"`
			Rootfs Rootfs `json:"rootfs"`
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		n := node{used: info.ModTime()}
		if m.Rootfs.Format == FormatQcow2 {
			n.parent = digestHex(m.Parent)
			if !validDigest(m.Parent) {
				n.parent = "(none)" // never a directory: the delta is broken
			}
		}
		nodes[e.Name()] = n
	}
	// missing returns the first parent in name's chain that is not there, or "".
	missing := func(name string) string {
		for range maxChain + 1 {
			n, ok := nodes[name]
			if !ok || n.parent == "" {
				return ""
			}
			if _, ok := nodes[n.parent]; !ok {
				return n.parent
			}
			name = n.parent
		}
		return name // a chain longer than Load follows
	}
	// needed: the parents of every image that stays.
	needed := map[string]string{} // parent → a child that keeps it
	for name, n := range nodes {
		if n.used.Before(cutoff) || missing(name) != "" {
			continue
		}
		for child, p := name, n.parent; p != "" && needed[p] == ""; child, p = p, nodes[p].parent {
			needed[p] = child
		}
	}
	return func(path string, lastUsed time.Time) string {
		name := filepath.Base(path)
		if gone := missing(name); gone != "" {
			return "derived as a delta from image " + gone + ", which is gone: it cannot boot without it"
		}
		if !lastUsed.Before(cutoff) {
			return ""
		}
		if child := needed[name]; child != "" {
			return "" // image child's root disk reads this one's
		}
		return "unused since " + lastUsed.UTC().Format(time.RFC3339)
	}
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
