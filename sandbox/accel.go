package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// CanaryTimeout bounds the KVM canary boot. A working KVM boots the kernel to its
// "no root" panic in well under a second; a broken nested KVM hangs forever.
const CanaryTimeout = 5 * time.Second

// AccelChoice is the accelerator a machine uses and why.
type AccelChoice struct {
	Accel  string `json:"accel"`
	Reason string `json:"reason"`
	// BootID ties a cached probe to one host boot: KVM's health does not change within
	// a boot, but may across them.
	BootID string `json:"boot_id"`
}

// ChooseAccel picks KVM or TCG for cfg. With AccelAuto it boots a canary kernel
// (cfg.Kernel) under KVM (cached per host boot in cfg.StateDir) and falls back to TCG
// when that fails.
func ChooseAccel(ctx context.Context, cfg Config) AccelChoice {
	cfg = cfg.withDefaults()
	if c, ok := KnownAccel(cfg); ok {
		return c
	}
	c := kvmCanary(ctx, cfg)
	if ctx.Err() != nil {
		// The caller gave up mid-canary (a session's Kill, a Ctrl-C): that says nothing
		// about KVM, and cached it would hold every later run on this host boot to TCG.
		return c
	}
	c.BootID = hostBootID()
	if b, err := json.Marshal(c); err == nil && os.MkdirAll(cfg.StateDir, 0o700) == nil {
		_ = fsutil.WriteFileAtomic(kvmProbeCache(cfg.StateDir), b, 0o600) // a lost cache entry costs one canary
	}
	return c
}

// KnownAccel is ChooseAccel's answer when it needs no canary boot: the accelerator cfg
// requests, TCG when /dev/kvm does not open, or the canary's result cached for this host
// boot. ok is false when only a canary boot of cfg.Kernel can tell.
func KnownAccel(cfg Config) (c AccelChoice, ok bool) {
	cfg = cfg.withDefaults()
	switch cfg.Accel {
	case AccelTCG:
		return AccelChoice{Accel: AccelTCG, Reason: "TCG requested"}, true
	case AccelKVM:
		return AccelChoice{Accel: AccelKVM, Reason: "KVM requested (no canary)"}, true
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return AccelChoice{Accel: AccelTCG, Reason: fmt.Sprintf("/dev/kvm unusable: %v", err)}, true
	}
	f.Close()
	bootID := hostBootID()
	if b, err := os.ReadFile(kvmProbeCache(cfg.StateDir)); err == nil {
		if json.Unmarshal(b, &c) == nil && c.BootID == bootID && bootID != "" {
			c.Reason += " (cached)"
			return c, true
		}
	}
	return AccelChoice{}, false
}

func kvmProbeCache(stateDir string) string { return filepath.Join(stateDir, "kvm-probe.json") }

// kvmCanary boots the kernel under KVM with no root disk; reaching the kernel's panic
// (which, with panic=-1 and -no-reboot, ends QEMU) proves guests run.
func kvmCanary(ctx context.Context, cfg Config) AccelChoice {
	ctx, cancel := context.WithTimeout(ctx, CanaryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.QEMU, "-M", "microvm", "-accel", "kvm", "-cpu", kvmCPU,
		"-m", "256", "-smp", "1", "-kernel", cfg.Kernel,
		"-append", "console=ttyS0 panic=-1 root=/dev/bumper-canary-none",
		"-display", "none", "-monitor", "none", "-serial", "stdio", "-nic", "none", "-no-reboot")
	cmd.Env = qemuEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return AccelChoice{Accel: AccelTCG, Reason: fmt.Sprintf("KVM canary did not finish booting within %v (nested KVM hangs)", CanaryTimeout)}
	case err != nil:
		return AccelChoice{Accel: AccelTCG, Reason: fmt.Sprintf("KVM canary failed: %v: %s", err, lastLine(out.String()))}
	case !strings.Contains(out.String(), "Kernel panic"):
		return AccelChoice{Accel: AccelTCG, Reason: "KVM canary exited without the kernel reaching its panic"}
	}
	return AccelChoice{Accel: AccelKVM, Reason: "KVM canary booted"}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func hostBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// hostTSCkHz returns the host CPU frequency in kHz for tsc_early_khz. Without it about
// one TCG boot in five hangs calibrating the TSC against the PIT.
func hostTSCkHz() (int, error) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0, fmt.Errorf("failed to read /proc/cpuinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || mhz <= 0 {
				return 0, fmt.Errorf("failed to parse cpu MHz %q", v)
			}
			return int(mhz * 1000), nil
		}
	}
	return 0, errors.New("no cpu MHz in /proc/cpuinfo")
}

// kvmCPU is the CPU model under KVM. Some hosts refuse to pass the
// IA32_ARCH_CAPABILITIES MSR through and QEMU aborts on `-cpu host` unless it is masked.
const kvmCPU = "host,-arch-capabilities"
