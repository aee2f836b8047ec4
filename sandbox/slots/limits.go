// Package slots bounds the VMs that run at once on one runner host, across every
// `bumper run` process on it: at most Limits.MaxVMs VMs, whose memory adds up to at most
// Limits.MemoryMB. A run that would exceed either waits its turn (Host.Acquire), in the
// order the runs asked, and never fails for it; the slot is freed by Slot.Release, or by
// the kernel when the process holding it dies, since every claim is a file held with
// flock(2).
package slots

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// The runner host's environment variables that set the limits (docs/runner-host.md).
const (
	// EnvMaxVMs is how many VMs may run at once on the host.
	EnvMaxVMs = "BUMPER_MAX_VMS"
	// EnvMemoryMB is how much memory, in MiB, the VMs running at once may have together.
	EnvMemoryMB = "BUMPER_VM_MEMORY_MB"
	// EnvDir is the directory of the slot files, shared by every run on the host.
	EnvDir = "BUMPER_SLOTS_DIR"
)

// DefaultDir is where the slot files live unless EnvDir says otherwise: beside the
// sandbox's run records (sandbox.Config.StateDir), on a tmpfs that a reboot empties.
const DefaultDir = "/run/bumper/slots"

// Bounds of the limits: more VMs than maxVMs on one host is a typing error, and a VM
// needs at least minMemoryMB (sandbox.Config's lowest memory).
const (
	maxVMs      = 1024
	minMemoryMB = 128
)

// Limits are the runner host's bounds on the VMs running at once.
type Limits struct {
	// MaxVMs is how many VMs may run at once.
	MaxVMs int
	// MemoryMB is how much memory, in MiB, they may have together.
	MemoryMB int
	// Dir holds the slot files.
	Dir string
}

// String says the limits as an admin sets them.
func (l Limits) String() string {
	return fmt.Sprintf("%s=%d, %s=%d, %s=%s", EnvMaxVMs, l.MaxVMs, EnvMemoryMB, l.MemoryMB, EnvDir, l.Dir)
}

// Machine is what the defaults are worked out from.
type Machine struct {
	// CPUs is how many CPUs the host has; MemTotalMB its memory (MemTotal), in MiB.
	CPUs, MemTotalMB int
}

// ThisMachine reads the host's CPUs and /proc/meminfo's MemTotal.
func ThisMachine() (Machine, error) {
	m := Machine{CPUs: runtime.NumCPU()}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return m, fmt.Errorf("failed to read the host's memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				return m, fmt.Errorf("failed to read the host's memory: MemTotal %q", fields[1])
			}
			m.MemTotalMB = kb / 1024
			return m, nil
		}
	}
	return m, errors.New("failed to read the host's memory: /proc/meminfo has no MemTotal")
}

// Defaults are the limits of a host whose environment sets none: one VM per CPU, and
// the host's memory but a quarter of it, and at least 1 GiB, for the host itself (the
// runner, the firewalls, QEMU's own memory, the page cache the image copies use).
func Defaults(m Machine) Limits {
	return Limits{MaxVMs: max(1, m.CPUs), MemoryMB: max(0, m.MemTotalMB-headroomMB(m.MemTotalMB)), Dir: DefaultDir}
}

// headroomMB is what the defaults keep of the host's memory for the host.
func headroomMB(totalMB int) int { return max(totalMB/4, 1024) }

// FromEnv reads the limits from the runner host's environment (getenv: os.Getenv), the
// defaults of m where a variable is unset or empty. A bad value is an error naming the
// variable and what to set it to; every bad value is reported at once.
func FromEnv(getenv func(string) string, m Machine) (Limits, error) {
	l := Defaults(m)
	var errs []error
	if v := strings.TrimSpace(getenv(EnvMaxVMs)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxVMs {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number of VMs from 1 to %d that may run at once on this runner host (unset: %d, one per CPU)",
				EnvMaxVMs, v, maxVMs, Defaults(m).MaxVMs))
		} else {
			l.MaxVMs = n
		}
	}
	if v := strings.TrimSpace(getenv(EnvMemoryMB)); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < minMemoryMB:
			errs = append(errs, fmt.Errorf("%s=%q: want the MiB of memory the VMs on this runner host may have together, a whole number from %d (unset: %d, the host's %d MiB less %d for the host)",
				EnvMemoryMB, v, minMemoryMB, Defaults(m).MemoryMB, m.MemTotalMB, headroomMB(m.MemTotalMB)))
		case m.MemTotalMB > 0 && n > m.MemTotalMB:
			errs = append(errs, fmt.Errorf("%s=%q: more than this runner host's memory (%d MiB), so its VMs could make it swap; set at most %d, and leave the host some",
				EnvMemoryMB, v, m.MemTotalMB, m.MemTotalMB))
		default:
			l.MemoryMB = n
		}
	}
	if v := strings.TrimSpace(getenv(EnvDir)); v != "" {
		if !filepath.IsAbs(v) {
			errs = append(errs, fmt.Errorf("%s=%q: want an absolute path, a directory only root may write (unset: %s)", EnvDir, v, DefaultDir))
		} else {
			l.Dir = filepath.Clean(v)
		}
	}
	if len(errs) == 0 && l.MemoryMB < minMemoryMB {
		errs = append(errs, fmt.Errorf("this runner host has %d MiB of memory, too little to leave the host %d MiB and run a VM: set %s to the MiB its VMs may have together",
			m.MemTotalMB, headroomMB(m.MemTotalMB), EnvMemoryMB))
	}
	return l, errors.Join(errs...)
}

// validate checks limits made by hand (New).
func (l Limits) validate() error {
	var errs []error
	if l.MaxVMs < 1 || l.MaxVMs > maxVMs {
		errs = append(errs, fmt.Errorf("%s is %d: want 1 to %d", EnvMaxVMs, l.MaxVMs, maxVMs))
	}
	if l.MemoryMB < minMemoryMB {
		errs = append(errs, fmt.Errorf("%s is %d: want %d or more", EnvMemoryMB, l.MemoryMB, minMemoryMB))
	}
	if !filepath.IsAbs(l.Dir) {
		errs = append(errs, fmt.Errorf("%s is %q: want an absolute path", EnvDir, l.Dir))
	}
	return errors.Join(errs...)
}

// Usage is what the VMs running on the host hold, and how many runs wait.
type Usage struct {
	VMs, MemoryMB int
	// Waiting is how many runs wait for a slot.
	Waiting int
}

// Fits says whether one more VM of needMB fits beside what is in use: the count and the
// memory must both stay within the limits.
func (l Limits) Fits(used Usage, needMB int) bool {
	return used.VMs+1 <= l.MaxVMs && used.MemoryMB+needMB <= l.MemoryMB
}
