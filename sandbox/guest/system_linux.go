package guest

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// LinuxSystem is the System of a real guest.
type LinuxSystem struct{}

// baseMounts are the filesystems PID 1 mounts before anything else.
var baseMounts = []struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}{
	{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
	{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
	{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755"},
	{"devpts", "/dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "gid=5,mode=620,ptmxmode=666"},
	{"tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
	{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
	{"tmpfs", "/run", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=0755"},
}

// MountBase mounts proc, sys, dev, devpts, shm, tmp and run. A target already mounted
// (the initramfs may move /dev over) is left as it is.
func (LinuxSystem) MountBase() error {
	for _, m := range baseMounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", m.target, err)
		}
		err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data)
		if err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("failed to mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// SetClock sets CLOCK_REALTIME.
func (LinuxSystem) SetClock(t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		return fmt.Errorf("failed to set the clock: %w", err)
	}
	return nil
}

// ConfigureNetwork brings up lo and eth0 with a static address and a default route.
func (LinuxSystem) ConfigureNetwork(n agentproto.Network) error {
	if err := n.Validate(); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("failed to find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("failed to bring up lo: %w", err)
	}
	eth, err := netlink.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("failed to find eth0 (is the VM's NIC attached?): %w", err)
	}
	addr, err := netlink.ParseAddr(n.Address)
	if err != nil {
		return fmt.Errorf("failed to parse %q: %w", n.Address, err)
	}
	if err := netlink.AddrReplace(eth, addr); err != nil {
		return fmt.Errorf("failed to set %s on eth0: %w", n.Address, err)
	}
	if err := netlink.LinkSetUp(eth); err != nil {
		return fmt.Errorf("failed to bring up eth0: %w", err)
	}
	gw := netip.MustParseAddr(n.Gateway)
	route := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(gw.AsSlice())}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("failed to add default route via %s: %w", n.Gateway, err)
	}
	return nil
}

// MountWorkspace mounts the workspace disk at dir and gives its files to uid:gid (the
// host builds it with its own ownership).
func (LinuxSystem) MountWorkspace(dir string, uid, gid int) error {
	dev, err := DiskBySerial(agentproto.WorkspaceSerial)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", dir, err)
	}
	if err := flushBuffers(dev); err != nil {
		return err
	}
	if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("failed to mount %s on %s: %w", dev, dir, err)
	}
	// mkfs.ext4 makes lost+found; left there it would show up in `git status`.
	_ = os.Remove(filepath.Join(dir, "lost+found"))
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("failed to give the workspace to uid %d: %w", uid, err)
	}
	return mountReadOnly(dir)
}

// mountReadOnly bind-mounts read-only each directory directly under dir that holds
// agentproto.ReadOnlyMarker: the unprivileged user can then change nothing in it, nor
// rename or remove it (a mount point), though it owns the files.
func mountReadOnly(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("failed to list the workspace: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(p, agentproto.ReadOnlyMarker)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("failed to bind-mount %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("failed to make %s read-only: %w", p, err)
		}
	}
	return nil
}

// GrowRoot grows the mounted root ext4 filesystem online to fill its disk.
func (LinuxSystem) GrowRoot() error {
	dev, err := DiskBySerial(agentproto.RootSerial)
	if err != nil {
		return err
	}
	out, err := exec.Command("/usr/sbin/resize2fs", dev).CombinedOutput()
	if err != nil {
		return fmt.Errorf("resize2fs %s (is e2fsprogs in the image?): %w: %s", dev, err, out)
	}
	return nil
}

// DropCaches writes back dirty pages, then drops the page cache and the dentry and inode
// caches.
func (LinuxSystem) DropCaches() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200); err != nil {
		return fmt.Errorf("failed to drop caches: %w", err)
	}
	return nil
}

// DiskBySerial returns the /dev path of the virtio disk with the given serial.
func DiskBySerial(serial string) (string, error) {
	if dev, ok := deviceWith("/sys/block/vd*/serial", serial); ok {
		return dev, nil
	}
	return "", fmt.Errorf("no virtio disk with serial %q (the host did not attach it)", serial)
}

// PortByName returns the /dev path of the virtio-serial port with the given name.
func PortByName(name string) (string, error) {
	if dev, ok := deviceWith("/sys/class/virtio-ports/*/name", name); ok {
		return dev, nil
	}
	return "", fmt.Errorf("no virtio-serial port named %q", name)
}

// deviceWith returns the /dev node of the first device whose sysfs attribute file
// (pattern, one per device directory) holds want.
func deviceWith(pattern, want string) (string, bool) {
	matches, _ := filepath.Glob(pattern)
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err == nil && strings.TrimSpace(string(b)) == want {
			return "/dev/" + filepath.Base(filepath.Dir(m)), true
		}
	}
	return "", false
}

// killUserTimeout bounds how long KillUser waits for killed processes to die (one in
// uninterruptible sleep dies only when its I/O ends).
const killUserTimeout = 10 * time.Second

// KillUser kills every process of uid and reaps the agent's zombie children, scanning
// again until a scan finds none alive: a process may fork between the scan that saw its
// parent and the kill, and a killed one lives on until the kernel has torn it down. A
// process counts as uid's when any of its real, effective, saved or filesystem uids is
// uid, so one that ran a set-uid program is not missed. Root is refused: the agent itself
// runs as root. It returns how many processes the first scan found: what the command left
// running (a fork bomb leaves the process limit's worth).
func (LinuxSystem) KillUser(uid int) (int, error) {
	if uid == 0 {
		return 0, errors.New("refusing to kill root's processes: the agent is one of them")
	}
	deadline := time.Now().Add(killUserTimeout)
	first := -1
	for {
		alive, err := killUIDOnce(uid)
		ReapZombies()
		if first < 0 {
			first = alive
		}
		if err != nil || alive == 0 {
			return first, err
		}
		if time.Now().After(deadline) {
			return first, fmt.Errorf("%d processes of uid %d still alive %v after SIGKILL", alive, uid, killUserTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// killUIDOnce sends SIGKILL to every live process of uid and returns how many it found.
func killUIDOnce(uid int) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("failed to list processes: %w", err)
	}
	alive := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		if !liveProcessOf(string(b), uid) {
			continue
		}
		alive++
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return alive, nil
}

// liveProcessOf says whether a /proc/PID/status text is of a live (not zombie, not dead)
// process with uid among its uids.
func liveProcessOf(status string, uid int) bool {
	owned, live := false, true
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "State:":
			// Z (zombie) and X (dead) are already gone but for their entry.
			live = f[1] != "Z" && f[1] != "X"
		case "Uid:":
			for _, v := range f[1:] {
				if n, err := strconv.Atoi(v); err == nil && n == uid {
					owned = true
				}
			}
		}
	}
	return owned && live
}

// ReapZombies collects every exited child without blocking. PID 1 inherits orphans, so
// it must reap them or they pile up.
func ReapZombies() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// PowerOff syncs the disks and resets the VM. The host always runs QEMU with
// -no-reboot, so a reset ends it; a real power-off would need ACPI, which a microvm may
// lack (and without it the kernel halts instead of exiting).
func PowerOff() error {
	unix.Sync()
	return unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
}

// flushBuffers drops the kernel's cached blocks of dev. After a snapshot restore the disk
// behind dev is a different file than at boot, and the partition scan's cached first
// blocks (which hold the ext4 superblock) would be stale.
func flushBuffers(dev string) error {
	f, err := os.Open(dev)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKFLSBUF, 0); err != nil {
		return fmt.Errorf("failed to flush the cached blocks of %s: %w", dev, err)
	}
	return nil
}
