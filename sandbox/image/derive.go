package image

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/internal/fsutil"
)

// Derivation says what made a derived image from its parent: a repository's environment
// (its setup script run once in a VM of the parent) whose result is kept as an image.
type Derivation struct {
	// Key is the caller's digest of the derivation's inputs ("sha256:<64 hex>"): what
	// FindDerived looks up, so the same inputs find the image again instead of running
	// the setup once more.
	Key string `json:"key"`
	// Describe is free metadata the caller keeps with the image (the setup script's path,
	// the cache paths, the input files). It is part of the manifest, and so of the digest.
	Describe map[string]string `json:"describe,omitempty"`
}

// derivePrefix starts the name of a derived image still being put together in the
// images directory; Prune removes those an interrupted Derive left.
const derivePrefix = ".derive-"

// rootDiskPrefix starts the name of a root disk saved for Derive (RootDiskStaging).
const rootDiskPrefix = ".rootdisk-"

// RootDiskStaging makes a directory where a caller may save the root disk it will pass
// to Derive: in the images directory, on the same file system, so Derive moves the disk
// rather than copying it, and named so that Prune removes one an interrupted caller left
// after an hour. The caller removes it when done.
func RootDiskStaging(imagesDir string) (string, error) {
	if err := os.MkdirAll(imagesDir, 0o755); err != nil {
		return "", fmt.Errorf("failed to create %s: %w", imagesDir, err)
	}
	dir, err := os.MkdirTemp(imagesDir, rootDiskPrefix)
	if err != nil {
		return "", fmt.Errorf("failed to make a staging directory for a root disk: %w", err)
	}
	return dir, nil
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// validDigest reports whether s is "sha256:<64 lowercase hex>".
func validDigest(s string) bool { return digestPattern.MatchString(s) }

// Derive makes an image from base and delta, a qcow2 file whose backing file is base's
// root disk and which holds what an environment's setup changed in it
// (sandbox.Session.SaveRootDisk writes one). The new image goes in base's images
// directory, named like any image for the digest of its manifest (schema
// DeltaSchemaVersion), which records base's digest as Parent and d; its kernel and
// initramfs are base's (hard links, or copies across file systems) and delta is moved in
// as rootfs.qcow2, so the caller's file is gone on success. Its backing file is then
// named relative to the images directory ("../<base digest hex>/rootfs.ext4"), so the
// directory can move as a whole. The derived image needs its parent: Load verifies
// both, and Prune keeps a parent while an image derived from it lives. A failure leaves
// no image (the staging directory goes) and the caller's file where it was, unless it
// was already moved.
//
// Deriving twice with one key makes two images (a root disk's file times differ from
// one setup to the next); FindDerived returns the newer, and Prune removes the other
// once it goes unused.
func Derive(base *Image, delta string, d Derivation) (*Image, error) {
	if base == nil {
		return nil, errors.New("failed to derive an image: no base image")
	}
	if !validDigest(d.Key) {
		return nil, fmt.Errorf("failed to derive an image: key %q is not sha256:<64 hex>; pass the digest of the derivation's inputs", d.Key)
	}
	if !validDigest(base.manifest.Digest) {
		return nil, fmt.Errorf("failed to derive an image: base %s has no valid digest; load it with image.Load", base.dir)
	}
	info, err := os.Lstat(delta)
	if err != nil {
		return nil, fmt.Errorf("failed to derive an image: %w", err)
	}
	if !info.Mode().IsRegular() || info.Size() == 0 {
		return nil, fmt.Errorf("failed to derive an image: %s is not a root disk delta (want a non-empty regular file)", delta)
	}
	// The delta must read as base's root disk plus the setup's changes: its backing
	// file is base's, wherever the caller named it from.
	q, err := ReadQcow2(delta)
	if err != nil {
		return nil, fmt.Errorf("failed to derive an image: %w (SaveRootDisk writes a qcow2 delta over the base's root disk)", err)
	}
	backing := q.Backing
	if backing != "" && !filepath.IsAbs(backing) {
		backing = filepath.Join(filepath.Dir(delta), backing)
	}
	if !sameFile(backing, base.RootfsPath()) || q.BackingFormat != base.RootfsFormat() || q.VirtualSize < base.manifest.Rootfs.SizeBytes {
		return nil, fmt.Errorf("failed to derive an image: %s is a %d-byte delta over %q (format %q), not over the base's root disk %s (at least %d bytes, format %s)",
			delta, q.VirtualSize, q.Backing, q.BackingFormat, base.RootfsPath(), base.manifest.Rootfs.SizeBytes, base.RootfsFormat())
	}
	// Prune keeps what was used lately, and an image's parents while it lives; marking
	// the base keeps it meanwhile, before the child can protect it.
	_ = cachedir.MarkUsed(base.dir)
	imagesDir := filepath.Dir(base.dir)
	stage, err := os.MkdirTemp(imagesDir, derivePrefix)
	if err != nil {
		return nil, fmt.Errorf("failed to create a staging directory in %s: %w", imagesDir, err)
	}
	defer os.RemoveAll(stage)
	// QEMU runs unprivileged and must read the image.
	if err := os.Chmod(stage, 0o755); err != nil {
		return nil, fmt.Errorf("failed to set the image directory's permissions: %w", err)
	}
	for _, f := range []string{KernelFile, InitrdFile} {
		if err := linkOrCopy(filepath.Join(base.dir, f), filepath.Join(stage, f)); err != nil {
			return nil, fmt.Errorf("failed to derive an image: %w", err)
		}
	}
	staged := filepath.Join(stage, DeltaFile)
	if err := moveFile(delta, staged); err != nil {
		return nil, fmt.Errorf("failed to move the root disk into the image: %w", err)
	}
	// The staging directory is the final one's sibling, so the relative name holds in
	// both; -u rewrites only the header (the content is the same: the same file).
	rel := deltaBacking(base)
	if out, err := exec.Command("qemu-img", "rebase", "-q", "-u", "-f", FormatQcow2, "-b", rel, "-F", base.RootfsFormat(), staged).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("failed to name the delta's backing file relative to the images directory (is qemu-utils installed?): %w: %s", err, bytes.TrimSpace(out))
	}
	if q, err = ReadQcow2(staged); err != nil {
		return nil, fmt.Errorf("failed to derive an image: %w", err)
	}
	if q.Backing != rel || q.BackingFormat != base.RootfsFormat() {
		return nil, fmt.Errorf("failed to derive an image: qemu-img recorded the backing file %q (%q), want %q", q.Backing, q.BackingFormat, rel)
	}
	// Like a built template: readable by QEMU's user, never written (runs overlay it).
	if err := os.Chmod(staged, 0o644); err != nil {
		return nil, fmt.Errorf("failed to set the root disk's permissions: %w", err)
	}
	sum, size, err := hashFile(staged)
	if err != nil {
		return nil, err
	}
	m := base.Manifest()
	m.Schema = DeltaSchemaVersion
	// Full precision, unlike a build's: FindDerived orders derivations of one key by it.
	m.Created = time.Now().UTC()
	m.Rootfs = Rootfs{SHA256: sum, SizeBytes: q.VirtualSize, Format: FormatQcow2, FileBytes: size}
	m.Parent = base.manifest.Digest
	m.Derivation = &Derivation{Key: d.Key, Describe: maps.Clone(d.Describe)}
	if m.Digest, err = m.computeDigest(); err != nil {
		return nil, err
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to encode the manifest: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(stage, ManifestFile), append(raw, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write the derived image's manifest: %w", err)
	}
	final := filepath.Join(imagesDir, digestHex(m.Digest))
	// An intact directory with the same digest holds identical files: keep it.
	if existing, err := Load(final); err == nil {
		return existing, nil
	}
	if err := os.RemoveAll(final); err != nil {
		return nil, fmt.Errorf("failed to replace the incomplete image %s: %w", final, err)
	}
	if err := os.Rename(stage, final); err != nil {
		return nil, fmt.Errorf("failed to move the derived image into place: %w", err)
	}
	// Verify what is now in place, its parent and the delta's header with it (the files
	// were just hashed; recording that spares the first run a second hash).
	recordVerified(final, m.Digest, DeltaFile)
	im, err := Load(final)
	if err != nil {
		_ = os.RemoveAll(final)
		return nil, fmt.Errorf("failed to derive an image: the new image does not load: %w", err)
	}
	return im, nil
}

// sameFile reports whether a and b name the same file.
func sameFile(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

// FindDerived returns the newest image in imagesDir derived with key that loads (Load
// verifies it), and marks it used so Prune keeps it; false when there is none. An image
// that fails to load is passed over: an older derivation of the same inputs serves as
// well.
func FindDerived(imagesDir, key string) (*Image, bool) {
	if !validDigest(key) {
		return nil, false
	}
	found, err := derivedImages(imagesDir, func(k string) bool { return k == key })
	if err != nil {
		return nil, false
	}
	im, err := loadNewest(found)
	return im, err == nil
}

// ErrNoDerived is FindDerivedPrefix's answer when no derived image's key starts with
// the prefix it was given.
var ErrNoDerived = errors.New("no derived image")

// MinKeyPrefix is the fewest hex digits FindDerivedPrefix accepts: people copy a key
// shortened, and 12 digits (48 bits, like Docker's short image ids) make two keys of one
// cache sharing them a rare accident, while fewer would make an ambiguity routine.
const MinKeyPrefix = 12

// AmbiguousKeyError is FindDerivedPrefix's answer when its prefix starts more than one
// derivation key: the caller's choice, not ours, so the keys are given back.
type AmbiguousKeyError struct {
	// Prefix is the prefix as given, normalized to "sha256:<hex>".
	Prefix string
	// Keys are the distinct keys it starts, sorted.
	Keys []string
}

func (e *AmbiguousKeyError) Error() string {
	return fmt.Sprintf("%s starts %d derivation keys, give more digits: %s", e.Prefix, len(e.Keys), strings.Join(e.Keys, ", "))
}

var keyPrefixPattern = regexp.MustCompile(fmt.Sprintf(`^[0-9a-f]{%d,64}$`, MinKeyPrefix))

// ParseKeyPrefix checks that id is a derivation key or a prefix of one, as people copy
// it: "sha256:" (optional) then MinKeyPrefix to 64 lower-case hex digits. It returns the
// prefix with "sha256:" in front. Anything else, a path included, is refused, so an id
// from a command line is only ever compared with keys, never used to name a file.
func ParseKeyPrefix(id string) (string, error) {
	digits := strings.TrimPrefix(id, "sha256:")
	if !keyPrefixPattern.MatchString(digits) {
		return "", fmt.Errorf("%q is not a derivation key: want sha256: (optional) and %d to 64 lower-case hex digits", id, MinKeyPrefix)
	}
	return "sha256:" + digits, nil
}

// FindDerivedPrefix is FindDerived for a key given in full or by a prefix (see
// ParseKeyPrefix): the newest loadable image in imagesDir whose derivation key starts
// with it, marked used. It fails with ErrNoDerived (wrapped) when no key starts with
// it, an *AmbiguousKeyError when several distinct keys do, and Load's error when
// images of the one key are there but none loads.
func FindDerivedPrefix(imagesDir, id string) (*Image, error) {
	prefix, err := ParseKeyPrefix(id)
	if err != nil {
		return nil, err
	}
	found, err := derivedImages(imagesDir, func(k string) bool { return strings.HasPrefix(k, prefix) })
	if errors.Is(err, fs.ErrNotExist) {
		// A cache that was never used holds no image: the same answer as an empty one.
		found, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, 1)
	for _, c := range found {
		if !slices.Contains(keys, c.key) {
			keys = append(keys, c.key)
		}
	}
	switch {
	case len(keys) == 0:
		return nil, fmt.Errorf("%w in %s has a key starting %s", ErrNoDerived, imagesDir, prefix)
	case len(keys) > 1:
		slices.Sort(keys)
		return nil, &AmbiguousKeyError{Prefix: prefix, Keys: keys}
	}
	im, err := loadNewest(found)
	if err != nil {
		return nil, fmt.Errorf("failed to load the image derived with key %s: %w", keys[0], err)
	}
	return im, nil
}

// derivedImage is one derived image's directory, read from its manifest without
// verifying its files (loadNewest does, for the one it returns).
type derivedImage struct {
	dir     string
	key     string
	created time.Time
}

// derivedImages lists the derived images in imagesDir whose key match accepts, newest
// first. A directory without a readable manifest is not an image and is left out.
func derivedImages(imagesDir string, match func(key string) bool) ([]derivedImage, error) {
	entries, err := os.ReadDir(imagesDir)
	if err != nil {
		return nil, fmt.Errorf("failed to read the images directory: %w", err)
	}
	var found []derivedImage
	for _, e := range entries {
		if !e.IsDir() || e.Name()[0] == '.' {
			continue
		}
		dir := filepath.Join(imagesDir, e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		if err != nil {
			continue
		}
		// Only the key and the time matter here; Load checks the rest of the chosen one.
		var m struct {
			Created    time.Time   `json:"created"`
			Derivation *Derivation `json:"derivation"`
		}
		if json.NewDecoder(bytes.NewReader(raw)).Decode(&m) != nil || m.Derivation == nil || !match(m.Derivation.Key) {
			continue
		}
		found = append(found, derivedImage{dir, m.Derivation.Key, m.Created})
	}
	slices.SortFunc(found, func(a, b derivedImage) int { return b.created.Compare(a.created) })
	return found, nil
}

// loadNewest loads the first of found that loads and marks it used; an image that
// fails to load is passed over for an older one. It returns the last failure when none
// loads.
func loadNewest(found []derivedImage) (*Image, error) {
	err := error(ErrNoDerived)
	for _, c := range found {
		var im *Image
		if im, err = Load(c.dir); err != nil {
			continue
		}
		// Prune keeps what was used lately; failing to say so only risks a new setup.
		_ = cachedir.MarkUsed(im.dir)
		return im, nil
	}
	return nil, err
}

// moveFile renames src to dst, copying (sparse, as a root file system is) and removing
// src when they are on different file systems.
func moveFile(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	if out, err := exec.Command("cp", "--sparse=always", "--", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("failed to copy %s across file systems: %w: %s", src, err, bytes.TrimSpace(out))
	}
	return os.Remove(src)
}
