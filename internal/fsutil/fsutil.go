// Package fsutil holds the file-system steps several of Bumper's packages need done the
// same careful way.
package fsutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path with the given mode so that a reader, or a crash,
// sees either the old file or the whole new one: it writes a uniquely named temporary
// file beside path, syncs it and renames it over path.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	return writeReplace(path, data, mode, true)
}

// ReplaceFile is WriteFileAtomic without the sync: a reader sees the old file or the
// new one, whenever the writing process dies, but the machine's crash may lose the new
// one. For state rewritten on every change that a restarted process must find and a
// lost machine may lose (the GitHub emulator's world).
func ReplaceFile(path string, data []byte, mode os.FileMode) error {
	return writeReplace(path, data, mode, false)
}

func writeReplace(path string, data []byte, mode os.FileMode, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// CopyFile copies src to a new file dst with perm; dst must not exist (it is never
// replaced, so a link planted at dst is not followed).
func CopyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
