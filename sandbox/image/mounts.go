package image

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// removeTree deletes a work directory that may hold a debootstrap target. debootstrap
// mounts proc and sysfs inside its target, and binds the host's /dev when it cannot
// make device nodes; a debootstrap killed midway leaves those mounts behind, and
// deleting through them would delete host files. So every mount at or below dir is
// detached first, and nothing is deleted if one stays.
func removeTree(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("failed to remove %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else if os.IsNotExist(err) {
		return nil
	}
	mounts, err := mountsUnder(abs)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			return fmt.Errorf("failed to unmount %s before removing %s (remove it by hand after umount): %w", m, dir, err)
		}
	}
	if left, err := mountsUnder(abs); err != nil {
		return err
	} else if len(left) > 0 {
		return fmt.Errorf("failed to remove %s: %s is still mounted; unmount it and remove the directory by hand", dir, left[0])
	}
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("failed to remove %s: %w", dir, err)
	}
	return nil
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("failed to read the mount table: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
