package vmdisk

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/internal/textcut"
)

// Limits bound what Extract accepts from a guest.
type Limits struct {
	// MaxBytes is the total size of all files.
	MaxBytes int64
	// MaxFiles is the number of entries.
	MaxFiles int
}

// Report says what Extract did with an archive.
type Report struct {
	Files int
	Bytes int64
	// Skipped lists the first MaxSkippedListed entries refused, each with the reason
	// (names cut to MaxSkippedName bytes); SkippedCount counts them all. The archive is the
	// guest's: a report of every refusal at full length would be as large as it wants.
	Skipped      []string
	SkippedCount int
}

// Bounds of a Report's list of refused entries.
const (
	MaxSkippedListed = 20
	MaxSkippedName   = 256
)

// skip records a refused entry.
func (r *Report) skip(name, reason string) {
	r.SkippedCount++
	if len(r.Skipped) < MaxSkippedListed {
		r.Skipped = append(r.Skipped, fmt.Sprintf("%q: %s", textcut.Fit(name, MaxSkippedName, textcut.Ellipsis), reason))
	}
}

// ErrLimit is returned when the archive exceeds Limits.
var ErrLimit = errors.New("guest output exceeds the limits")

// Extract reads the tar the guest wrote to diskPath and recreates its regular files,
// directories and symlinks under dest. The archive is untrusted: entries with absolute
// paths, `..`, special types, or symlinks that could lead out of dest are skipped and
// reported; nothing is ever written through a symlink; ownership and set-id bits are not
// taken. Exceeding limits stops the extraction with ErrLimit. Reading stops at the
// archive's end-of-archive blocks, never at the end of the disk: a guest that rewrote
// the disk with a shorter archive than an earlier one gets the shorter one alone.
func Extract(diskPath, dest string, lim Limits) (*Report, error) {
	f, err := os.Open(diskPath)
	if err != nil {
		return nil, fmt.Errorf("failed to open out disk: %w", err)
	}
	defer f.Close()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", dest, err)
	}
	rep := &Report{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("failed to read guest output archive: %w", err)
		}
		rep.Files++
		if rep.Files > lim.MaxFiles {
			return rep, fmt.Errorf("%w: more than %d entries", ErrLimit, lim.MaxFiles)
		}
		name, reason := cleanName(hdr.Name)
		if reason != "" {
			rep.skip(hdr.Name, reason)
			continue
		}
		target := filepath.Join(dest, filepath.FromSlash(name))
		if err := checkParents(dest, name); err != nil {
			rep.skip(hdr.Name, err.Error())
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return rep, fmt.Errorf("failed to create %s: %w", target, err)
			}
		case tar.TypeReg:
			if hdr.Size > lim.MaxBytes-rep.Bytes {
				return rep, fmt.Errorf("%w: more than %d bytes", ErrLimit, lim.MaxBytes)
			}
			if err := writeFile(target, tr, hdr); err != nil {
				return rep, err
			}
			rep.Bytes += hdr.Size
		case tar.TypeSymlink:
			if reason := checkLink(hdr.Linkname); reason != "" {
				rep.skip(hdr.Name, reason)
				continue
			}
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return rep, fmt.Errorf("failed to create symlink %s: %w", target, err)
			}
		default:
			rep.skip(hdr.Name, fmt.Sprintf("type %q is not a file, directory or symlink", hdr.Typeflag))
		}
	}
}

// cleanName returns the slash-separated relative path of an entry, or why it is refused.
func cleanName(name string) (string, string) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", "empty or NUL in name"
	}
	if strings.HasPrefix(name, "/") {
		return "", "absolute path"
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", "path contains .."
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", "names the output root"
	}
	return c, ""
}

// checkLink refuses symlink targets that could resolve outside the output directory.
// Lexical checks are not enough once links chain (a link to "." followed by ".."), so any
// ".." is refused along with absolute targets.
func checkLink(target string) string {
	if target == "" || strings.HasPrefix(target, "/") {
		return "symlink target is empty or absolute"
	}
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			return "symlink target contains .."
		}
	}
	return ""
}

// checkParents makes sure no directory on the way to name is a symlink, so writes never
// follow a link the archive planted.
func checkParents(dest, name string) error {
	parts := strings.Split(name, "/")
	cur := dest
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		info, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil {
				return fmt.Errorf("failed to create %s: %w", cur, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if !info.IsDir() {
			return fmt.Errorf("parent %s is not a directory (a symlink or file)", cur)
		}
	}
	if info, err := os.Lstat(filepath.Join(dest, filepath.FromSlash(name))); err == nil && info.Mode()&os.ModeSymlink != 0 {
		return errors.New("an entry already exists there as a symlink")
	}
	return nil
}

func writeFile(target string, r io.Reader, hdr *tar.Header) error {
	// Only the user's permission bits are kept: no set-id, no sticky, no group/world write.
	mode := os.FileMode(hdr.Mode).Perm() &^ 0o022
	f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|noFollow, mode|0o600)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", target, err)
	}
	if _, err := io.CopyN(f, r, hdr.Size); err != nil {
		f.Close()
		return fmt.Errorf("failed to write %s: %w", target, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to write %s: %w", target, err)
	}
	return nil
}
