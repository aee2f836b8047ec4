// Package sandbox runs commands in a QEMU microVM: a qcow2 overlay over an image's root
// filesystem, a workspace disk in, an out disk back, Bumper's guest agent as PID 1
// talking over virtio-serial, and (optionally) a TAP inside a locked-down network
// namespace. A Session runs several commands in one VM, one at a time; Run is a session
// of one command. It never imports the firewall: the caller passes a ProxyStarter (or
// its own TAP through Config.Network).
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/sandbox/agentproto"
	"github.com/bumperdev/bumper/sandbox/image"
)

// Accel values for Config.Accel.
const (
	AccelAuto = "auto" // KVM when a canary boot proves it works, else TCG
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// Config describes one VM. Zero values take the defaults documented per field.
type Config struct {
	// Kernel, Initrd and Rootfs are the image's vmlinux, initramfs and root file system
	// template (the template is only ever a read-only backing file).
	Kernel, Initrd, Rootfs string
	// RootfsFormat is Rootfs's format, the run overlay's backing format: "raw" (default;
	// a built image's ext4) or "qcow2" (a derived image's delta, image.RootfsFormat). It
	// is never probed from the file: a raw disk a guest wrote could pose as qcow2.
	RootfsFormat string
	// Cmdline is the image's kernel command line; the sandbox appends its own arguments.
	Cmdline string
	// CPUs is the vCPU count (default 2).
	CPUs int
	// MemoryMB is the guest memory (default DefaultMemoryMB).
	MemoryMB int
	// DiskSizeMB is the root disk's size; 0 keeps the template's (whose free space the
	// image build sets). A larger size grows the guest's root filesystem at the start of
	// the run; it bounds how much the command can write outside /workspace.
	DiskSizeMB int
	// Timeout is the wall-time limit from Start, over every command the VM runs; when it
	// passes the VM is killed and the result says so (default 30m).
	Timeout time.Duration
	// WorkspaceDir, when set, is copied into an ext4 disk the guest mounts at /workspace.
	WorkspaceDir string
	// WorkspaceFreeMB is free space added to the workspace disk (default 1024).
	WorkspaceFreeMB int
	// SnapshotDir, when set, enables warm starts: Start restores a snapshot from here
	// when a valid one matches this configuration (see PrepareSnapshot) and cold-boots
	// otherwise, saying why. Disks then have fixed sizes so layouts match.
	SnapshotDir string
	// WarmUp are the commands a snapshot's agent runs once, as the agent user, before it
	// is saved, so that what they read (the loader, libc, the locale, the tools and their
	// directory entries) is in the snapshot's page cache rather than read from disk by
	// every restored run (default DefaultWarmUp; an empty non-nil slice runs none).
	WarmUp [][]string
	// WorkspaceDiskMB is the fixed workspace disk size used with SnapshotDir (default
	// 4096; sparse, so unused space costs nothing).
	WorkspaceDiskMB int
	// OutMaxBytes caps what the guest may return from /out (default 256 MiB).
	OutMaxBytes int64
	// OutMaxFiles caps the number of entries returned from /out (default 100000).
	OutMaxFiles int
	// MaxProcs is the command user's process-count limit (default DefaultMaxProcs).
	MaxProcs uint64
	// Accel is AccelAuto (default), AccelKVM or AccelTCG.
	Accel string
	// Network, when set, gives the guest a NIC on a TAP device; nil means no NIC at all.
	Network *Network
	// RunDir is where per-run files (overlay, disks, sockets) go (default os.TempDir()).
	RunDir string
	// StateDir holds run records for the reaper and the KVM probe cache (default
	// /run/bumper).
	StateDir string
	// QEMU is the qemu-system-x86_64 binary (default from PATH).
	QEMU string
	// QEMUUser, when set, is the user ("name", "uid" or "uid:gid") QEMU runs as from its
	// start: the TAP and a snapshot's state reach it as inherited descriptors and the run
	// directory is given to it (under KVM it must still be able to open /dev/kvm).
	QEMUUser string
}

// DefaultMemoryMB is Config.MemoryMB's default.
const DefaultMemoryMB = 1024

// DefaultMaxProcs is Config.MaxProcs's default.
const DefaultMaxProcs = 512

// DefaultWarmUp covers what most commands start with: the shell, coreutils with the
// UTF-8 locale, and git.
var DefaultWarmUp = [][]string{{"sh", "-c", "echo"}, {"echo"}, {"ls", "/"}, {"git", "--version"}}

// withDefaults returns c with zero fields filled in.
func (c Config) withDefaults() Config {
	if c.CPUs == 0 {
		c.CPUs = 2
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = DefaultMemoryMB
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Minute
	}
	if c.WorkspaceFreeMB == 0 {
		c.WorkspaceFreeMB = 1024
	}
	if c.WorkspaceDiskMB == 0 {
		c.WorkspaceDiskMB = 4096
	}
	if c.OutMaxBytes == 0 {
		c.OutMaxBytes = 256 << 20
	}
	if c.OutMaxFiles == 0 {
		c.OutMaxFiles = 100000
	}
	if c.MaxProcs == 0 {
		c.MaxProcs = DefaultMaxProcs
	}
	if c.WarmUp == nil {
		c.WarmUp = DefaultWarmUp
	}
	if c.Accel == "" {
		c.Accel = AccelAuto
	}
	if c.RunDir == "" {
		c.RunDir = os.TempDir()
	}
	if c.StateDir == "" {
		c.StateDir = "/run/bumper"
	}
	if c.QEMU == "" {
		c.QEMU = "qemu-system-x86_64"
	}
	if c.RootfsFormat == "" {
		c.RootfsFormat = image.FormatRaw
	}
	return c
}

// Validate reports every problem with the configuration at once, each saying what to fix.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	for _, f := range []struct{ name, path string }{{"Kernel", c.Kernel}, {"Initrd", c.Initrd}, {"Rootfs", c.Rootfs}} {
		if f.path == "" {
			errs = append(errs, fmt.Errorf("%s is empty: point it at the image's file (see bumper image build)", f.name))
			continue
		}
		if info, err := os.Stat(f.path); err != nil || !info.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("%s %q is not a readable file: rebuild the image or fix the path", f.name, f.path))
		}
	}
	if c.CPUs < 1 || c.CPUs > 64 {
		errs = append(errs, fmt.Errorf("CPUs is %d: use 1 to 64", c.CPUs))
	}
	if c.MemoryMB < 128 || c.MemoryMB > 256<<10 {
		errs = append(errs, fmt.Errorf("MemoryMB is %d: use 128 to 262144 (the Debian kernel needs at least 128)", c.MemoryMB))
	}
	switch c.RootfsFormat {
	case image.FormatRaw, image.FormatQcow2:
	default:
		errs = append(errs, fmt.Errorf("RootfsFormat is %q: use %q or %q (the image's root file system format)", c.RootfsFormat, image.FormatRaw, image.FormatQcow2))
	}
	if c.DiskSizeMB < 0 {
		errs = append(errs, fmt.Errorf("DiskSizeMB is %d: use 0 (template size) or a positive size", c.DiskSizeMB))
	} else if size, err := image.DiskSize(c.Rootfs, c.RootfsFormat); err == nil && c.DiskSizeMB > 0 && int64(c.DiskSizeMB)<<20 < size {
		errs = append(errs, fmt.Errorf("DiskSizeMB is %d but the image's root filesystem is %d MiB: the disk can only grow; use 0 or at least %d",
			c.DiskSizeMB, size>>20, (size+1<<20-1)>>20))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("invalid Timeout %v: use a positive duration, or 0 for the default", c.Timeout))
	}
	if c.WorkspaceDir != "" {
		if info, err := os.Stat(c.WorkspaceDir); err != nil || !info.IsDir() {
			errs = append(errs, fmt.Errorf("WorkspaceDir %q is not a directory: pass an existing directory or leave it empty", c.WorkspaceDir))
		}
	}
	if c.WorkspaceFreeMB < 0 || c.OutMaxBytes < 0 || c.OutMaxFiles < 0 {
		errs = append(errs, errors.New("WorkspaceFreeMB, OutMaxBytes and OutMaxFiles must not be negative"))
	}
	switch c.Accel {
	case AccelAuto, AccelKVM, AccelTCG:
	default:
		errs = append(errs, fmt.Errorf("Accel is %q: use %q, %q or %q", c.Accel, AccelAuto, AccelKVM, AccelTCG))
	}
	if err := (&agentproto.Prepare{WarmUp: c.WarmUp}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("WarmUp: %w", err))
	}
	if c.Network != nil {
		if err := c.Network.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := parseUser(c.QEMUUser); err != nil {
		errs = append(errs, err)
	}
	if _, err := exec.LookPath(c.QEMU); err != nil {
		errs = append(errs, fmt.Errorf("QEMU binary %q not found: apt-get install qemu-system-x86", c.QEMU))
	}
	return errors.Join(errs...)
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
