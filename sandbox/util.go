package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tailFile returns the last lines of a log file for error messages.
func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// parseUser turns "name", "uid" or "uid:gid" into a credential; "" means no change.
func parseUser(s string) (*syscall.Credential, error) {
	if s == "" {
		return nil, nil
	}
	name, group, _ := strings.Cut(s, ":")
	uid, err := strconv.ParseUint(name, 10, 32)
	gid := uid
	if err != nil {
		u, lerr := user.Lookup(name)
		if lerr != nil {
			return nil, fmt.Errorf("QEMUUser %q: no such user (create it with useradd --system %s, or give uid:gid)", s, name)
		}
		uid, _ = strconv.ParseUint(u.Uid, 10, 32)
		gid, _ = strconv.ParseUint(u.Gid, 10, 32)
	}
	if group != "" {
		if gid, err = strconv.ParseUint(group, 10, 32); err != nil {
			return nil, fmt.Errorf("QEMUUser %q: group must be numeric", s)
		}
	}
	if uid == 0 {
		return nil, fmt.Errorf("QEMUUser %q is root; QEMU must run unprivileged", s)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// chownAll gives the run directory to QEMU's user so it can open its disks and sockets.
func chownAll(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("failed to give the run directory to uid %d: %w", uid, err)
	}
	return nil
}

// copyFile copies a small regular file (a template overlay) to a new file dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("failed to write %s: %w", dst, err)
	}
	return nil
}
