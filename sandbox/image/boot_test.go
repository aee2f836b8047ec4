package image_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestBuildAndBoot builds an image in the shared test cache, boots it under QEMU microvm
// with the real Debian kernel in check mode, then checks that a second build with the
// same inputs reuses the image untouched and that the boot left the template unwritten.
func TestBuildAndBoot(t *testing.T) {
	imagetest.SkipUnlessCanBuild(t)
	skipWithoutQEMU(t)
	agent := imagetest.AgentBinary(t)
	var progress bytes.Buffer
	cfg := image.BuildConfig{CacheDir: imagetest.CacheDir(), AgentBinary: agent, Progress: &progress}
	im, err := image.Build(context.Background(), cfg)
	t.Logf("build progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	m := im.Manifest()

	t.Run("manifest", func(t *testing.T) {
		raw, err := os.ReadFile(agent)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if m.Agent.SHA256 != hex.EncodeToString(sum[:]) || m.Agent.Path != image.AgentPath {
			t.Errorf("agent %+v, want %s at %s", m.Agent, hex.EncodeToString(sum[:]), image.AgentPath)
		}
		for _, want := range []string{"git", "ca-certificates", "passwd"} {
			if !slices.ContainsFunc(m.Packages, func(p image.Package) bool { return p.Name == want && p.Version != "" }) {
				t.Errorf("manifest packages lack %s", want)
			}
		}
		if filepath.Base(im.Dir()) != strings.TrimPrefix(m.Digest, "sha256:") {
			t.Errorf("directory %s is not named for digest %s", im.Dir(), m.Digest)
		}
		if m.Suite != "bookworm" || m.Rootfs.Format != "raw" || m.Cmdline != image.BaseCmdline {
			t.Errorf("manifest suite %q, format %q, cmdline %q", m.Suite, m.Rootfs.Format, m.Cmdline)
		}
	})

	t.Run("boots to the check report", func(t *testing.T) {
		report := bootCheck(t, im)
		if report["kernel"] != m.Kernel.Release {
			t.Errorf("guest kernel %q, manifest says %q", report["kernel"], m.Kernel.Release)
		}
		want := slices.Clone(m.Initrd.Modules)
		slices.Sort(want)
		if got := strings.Fields(report["modules"]); !slices.Equal(got, want) {
			t.Errorf("guest loaded modules %v, want %v", got, want)
		}
		if report["root"] != "/dev/vda ext4 rw" || report["agent"] != "present" || report["layout"] != "ok" {
			t.Errorf("guest report %v, want root /dev/vda ext4 rw, agent present, layout ok", report)
		}
	})

	t.Run("second build with the same inputs does nothing", func(t *testing.T) {
		before, err := os.Stat(filepath.Join(im.Dir(), image.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		var progress bytes.Buffer
		cfg := cfg
		cfg.Progress = &progress
		again, err := image.Build(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(filepath.Join(again.Dir(), image.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		if again.Dir() != im.Dir() || again.Manifest().Digest != m.Digest || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("second build gave %s (%s), want the untouched %s (%s)", again.Dir(), again.Manifest().Digest, im.Dir(), m.Digest)
		}
		if !strings.Contains(progress.String(), "cached, nothing to do") {
			t.Errorf("second build progress:\n%s", progress.String())
		}
	})

	t.Run("the boot left the template unwritten", func(t *testing.T) {
		if _, err := image.Load(im.Dir()); err != nil {
			t.Fatal(err)
		}
	})
}

func skipWithoutQEMU(t testing.TB) {
	t.Helper()
	testgate.RequiresQEMU(t)
}

// BenchmarkCheckBoot measures a TCG boot of the image in check mode, from QEMU start
// through module loading and the root mount to power-off (overlay creation included).
func BenchmarkCheckBoot(b *testing.B) {
	skipWithoutQEMU(b)
	im := imagetest.Image(b)
	b.ResetTimer()
	for b.Loop() {
		bootCheck(b, im)
	}
}

// bootCheck boots im with CheckArg over a qcow2 overlay and returns the report lines
// as key → value.
func bootCheck(t testing.TB, im *image.Image) map[string]string {
	t.Helper()
	overlay := filepath.Join(t.TempDir(), "root.qcow2")
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", im.RootfsPath(), overlay).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img create: %v\n%s", err, out)
	}
	khz, err := hostTSCkHz()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmdline := fmt.Sprintf("%s tsc_early_khz=%d %s", im.Manifest().Cmdline, khz, image.CheckArg)
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-M", "microvm", "-accel", "tcg", "-cpu", "max", "-m", "512",
		"-kernel", im.KernelPath(), "-initrd", im.InitrdPath(), "-append", cmdline,
		"-drive", "id=root,file="+overlay+",format=qcow2,if=none", "-device", "virtio-blk-device,drive=root",
		"-nographic", "-no-reboot")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("QEMU: %v\nconsole:\n%s", err, out)
	}
	report := map[string]string{}
	inReport, ended := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, image.InitErrorPrefix):
			t.Fatalf("/init failed: %s\nconsole:\n%s", line, out)
		case line == image.CheckBegin:
			inReport = true
		case line == image.CheckEnd:
			inReport, ended = false, true
		case inReport:
			if k, v, ok := strings.Cut(line, ": "); ok {
				report[k] = strings.TrimSpace(v)
			}
		}
	}
	if !ended {
		t.Fatalf("no complete check report on the console:\n%s", out)
	}
	return report
}

// hostTSCkHz returns the host's TSC frequency for tsc_early_khz, which keeps TCG boots
// from hanging in PIT calibration.
func hostTSCkHz() (int, error) {
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/tsc_freq_khz"); err == nil {
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, fmt.Errorf("failed to read the CPU frequency: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("failed to parse cpu MHz %q: %w", v, err)
			}
			return int(mhz * 1000), nil
		}
	}
	return 0, fmt.Errorf("no cpu MHz in /proc/cpuinfo and no tsc_freq_khz in sysfs")
}
