package guest

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// errOutTooLarge is returned when /out does not fit the cap the host set.
var errOutTooLarge = errors.New("/out is over the host's cap")

// writeOut writes a tar of dir to device and returns its size. Only regular files,
// directories and symlinks go in; the host re-checks everything. When the tar would
// exceed max, the device is reset to an empty archive and an error says so.
func writeOut(dir, device string, max int64) (int64, error) {
	f, err := os.OpenFile(device, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("failed to open out device %s: %w", device, err)
	}
	defer f.Close()
	lw := &limitWriter{w: f, left: max}
	err = tarDir(dir, lw)
	if err != nil {
		// Two zero blocks at the start make the host read an empty archive instead of a
		// truncated one.
		if _, zerr := f.WriteAt(make([]byte, 1024), 0); zerr != nil {
			return 0, fmt.Errorf("failed to reset out device after %w: %w", err, zerr)
		}
		if serr := f.Sync(); serr != nil {
			return 0, fmt.Errorf("failed to sync out device: %w", serr)
		}
		if errors.Is(err, errOutTooLarge) {
			// The host's reason for a run that returned nothing: say what and how much.
			return 0, fmt.Errorf("%w: it holds more than the %s the VM may return, so none of it is returned", errOutTooLarge, size(max))
		}
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("failed to sync out device: %w", err)
	}
	return max - lw.left, nil
}

func tarDir(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if path == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch {
		case info.Mode().IsRegular(), info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		default:
			return nil // devices, fifos and sockets never leave the guest
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.CopyN(tw, src, hdr.Size)
		return err
	})
	if err != nil {
		return fmt.Errorf("failed to archive %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("failed to archive %s: %w", dir, err)
	}
	return nil
}

// size is n bytes for a person: in MiB when it is a whole number of them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errOutTooLarge
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
