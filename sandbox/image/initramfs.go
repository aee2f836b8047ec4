package image

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// initScript is the initramfs's /init.
//
//go:embed init.sh
var initScript []byte

// BaseCmdline holds the kernel arguments every image needs. root, rootfstype and rw are
// read by /init (there is no kernel root mount); panic=-1 reboots at once on a panic so
// QEMU, run with -no-reboot, exits instead of hanging.
const BaseCmdline = "console=ttyS0 root=/dev/vda rootfstype=ext4 rw panic=-1"

// writeInitramfs writes an uncompressed newc initramfs holding busybox, /init and the
// given modules (paths relative to modRoot, the kernel's /lib/modules/<release>).
// Uncompressed because QEMU copies it into guest memory for free, while unpacking gzip
// under TCG costs boot time.
func writeInitramfs(out *bytes.Buffer, busybox []byte, release, modRoot string, modulePaths []string) error {
	cw := newCPIOWriter(out)
	dirs := map[string]bool{}
	mkdirAll := func(dir string) error {
		var parts []string
		for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			parts = append(parts, d)
		}
		for i := len(parts) - 1; i >= 0; i-- {
			if dirs[parts[i]] {
				continue
			}
			dirs[parts[i]] = true
			if err := cw.Dir(parts[i], 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range []string{"bin", "dev", "proc", "sys", "newroot", "etc/bumper"} {
		if err := mkdirAll(d); err != nil {
			return err
		}
	}
	if err := cw.CharDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	if err := cw.File("bin/busybox", 0o755, busybox); err != nil {
		return err
	}
	if err := cw.Symlink("bin/sh", "busybox"); err != nil {
		return err
	}
	if err := cw.File("init", 0o755, initScript); err != nil {
		return err
	}
	if err := cw.File("etc/bumper/modules", 0o644, []byte(strings.Join(modulePaths, "\n")+"\n")); err != nil {
		return err
	}
	for _, p := range modulePaths {
		data, err := os.ReadFile(filepath.Join(modRoot, filepath.FromSlash(p)))
		if err != nil {
			return fmt.Errorf("failed to read module for the initramfs: %w", err)
		}
		name := path.Join("lib/modules", release, p)
		if err := mkdirAll(path.Dir(name)); err != nil {
			return err
		}
		if err := cw.File(name, 0o644, data); err != nil {
			return err
		}
	}
	if err := cw.Close(); err != nil {
		return fmt.Errorf("failed to finish the initramfs: %w", err)
	}
	return nil
}

// Markers /init prints on the serial console (see init.sh).
const (
	// CheckArg on the kernel command line makes /init print a boot report between
	// CheckBegin and CheckEnd ("kernel:", "modules:", "root:", "agent:", "layout:"
	// lines) and power off instead of starting the agent.
	CheckArg   = "bumper.check=1"
	CheckBegin = "BUMPER-CHECK-BEGIN"
	CheckEnd   = "BUMPER-CHECK-END"
	// InitErrorPrefix starts the line /init prints before powering off on a failure.
	InitErrorPrefix = "BUMPER-INIT-ERROR: "
)
