// Package workspace moves files in and out of a sandbox VM over virtio-blk disks that the
// host builds and reads without mounting: the workspace goes in as an ext4 image made
// with `mkfs.ext4 -d`; results come out as a tar the guest agent writes onto a raw disk,
// which the host reads as untrusted input.
package vmdisk

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// slack is the free space added to a workspace disk on top of its content, so the
// command has room to work (git objects, build outputs).
const slack = 256 << 20

// BuildDisk writes an ext4 image of srcDir to diskPath, sized to the content plus extra
// bytes of free space, without mounting anything.
func BuildDisk(ctx context.Context, srcDir, diskPath string, extra int64) error {
	info, err := os.Stat(srcDir)
	if err != nil {
		return fmt.Errorf("failed to read workspace %s: %w", srcDir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("workspace %s is not a directory; pass a directory", srcDir)
	}
	used, err := dirSize(srcDir)
	if err != nil {
		return err
	}
	// ext4 metadata (inode tables, journal) needs room beyond the file data.
	return BuildDiskSized(ctx, srcDir, diskPath, used+used/4+slack+extra)
}

// BuildDiskSized is BuildDisk with an exact disk size, for layouts that must not change
// between runs (snapshot restores).
func BuildDiskSized(ctx context.Context, srcDir, diskPath string, size int64) error {
	if info, err := os.Stat(srcDir); err != nil || !info.IsDir() {
		return fmt.Errorf("workspace %s is not a readable directory; pass a directory", srcDir)
	}
	if err := createSparse(diskPath, size, "workspace disk"); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-d", srcDir, "-L", "workspace",
		"-E", "root_owner=1000:1000", "-O", "^has_journal", diskPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build a %d MiB workspace disk with mkfs.ext4 -d (too small for the workspace? is e2fsprogs installed?): %w: %s", size>>20, err, out)
	}
	return nil
}

// CreateOutDisk creates the sparse raw disk the guest writes /out onto.
func CreateOutDisk(diskPath string, size int64) error {
	return createSparse(diskPath, size, "out disk")
}

// createSparse creates a new sparse file of size bytes; what names it in errors.
func createSparse(path string, size int64, what string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", what, err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("failed to size %s: %w", what, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to create %s: %w", what, err)
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Round each file to a 4 KiB block, as ext4 stores it.
		total += (info.Size() + 4095) &^ 4095
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("failed to measure workspace %s: %w", dir, err)
	}
	return total, nil
}
