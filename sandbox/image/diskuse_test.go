package image_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// blocks is the disk space a file takes (its allocated blocks, not its size).
func blocks(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Blocks * 512
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// BenchmarkEnvironmentsDiskUse measures what ten environments of one base image cost on
// disk: each is the real base's root file system with what a setup leaves (32 MiB that
// do not compress and 200 small files under the agent's home, written with debugfs, no
// VM), kept as a full raw copy (what Derive kept before) and as a qcow2 delta made the
// way SaveRootDisk makes it (an empty qcow2 over the disk, rebased onto the base's) and
// derived into an image. It reports the allocated MiB of both (a figure, not a test:
// `go test -run '^$' -bench EnvironmentsDiskUse -benchtime 1x ./sandbox/image`).
func BenchmarkEnvironmentsDiskUse(b *testing.B) {
	for range b.N {
		environmentsDiskUse(b)
	}
}

func environmentsDiskUse(t *testing.B) {
	testgate.Slow(t, "copies a real base image's root file system ten times")
	testgate.Command(t, "debugfs", "e2fsprogs")
	testgate.Command(t, "qemu-img", "qemu-utils")
	shared := imagetest.Image(t)
	// The base, hard-linked into a cache of the test's own (the test cache shares a file
	// system with the temporary directories, as cloneImage in sandbox needs too).
	images := image.ImagesDir(t.TempDir())
	baseDir := filepath.Join(images, filepath.Base(shared.Dir()))
	if err := os.MkdirAll(baseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{image.ManifestFile, image.KernelFile, image.InitrdFile, image.RootfsFile} {
		if err := os.Link(filepath.Join(shared.Dir(), f), filepath.Join(baseDir, f)); err != nil {
			t.Skipf("cannot hard-link the test image: %v", err)
		}
	}
	base, err := image.Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	blob, small := filepath.Join(work, "blob"), filepath.Join(work, "small")
	const envs = 10
	var full, deltas int64
	var deltaTime time.Duration
	for i := range envs {
		// A setup's result: fresh random bytes each time, as a real toolchain download's
		// differ from one environment to the next.
		buf := make([]byte, 32<<20)
		_, _ = rand.Read(buf)
		if err := os.WriteFile(blob, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(small, buf[:4096], 0o644); err != nil {
			t.Fatal(err)
		}
		cmds := []string{fmt.Sprintf("mkdir /home/agent/env%d", i), fmt.Sprintf("write %s /home/agent/env%d/blob", blob, i)}
		for j := range 200 {
			cmds = append(cmds, fmt.Sprintf("write %s /home/agent/env%d/f%d", small, i, j))
		}
		script := filepath.Join(work, "debugfs.cmd")
		if err := os.WriteFile(script, []byte(strings.Join(cmds, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		raw := filepath.Join(work, "env.raw")
		run(t, "cp", "--sparse=always", base.RootfsPath(), raw)
		run(t, "debugfs", "-w", "-f", script, raw)
		run(t, "e2fsck", "-fn", raw)
		full += blocks(t, raw)

		began := time.Now()
		delta := filepath.Join(work, "env.qcow2")
		run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-b", raw, "-F", "raw", delta)
		run(t, "qemu-img", "rebase", "-q", "-f", "qcow2", "-b", base.RootfsPath(), "-F", "raw", delta)
		deltaTime += time.Since(began)
		run(t, "qemu-img", "compare", "-q", "-f", "qcow2", "-F", "raw", delta, raw)
		sum := sha256.Sum256([]byte(fmt.Sprintf("env %d", i)))
		d, err := image.Derive(base, delta, image.Derivation{Key: "sha256:" + hex.EncodeToString(sum[:])})
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		// What the derived image reads is the environment's disk.
		run(t, "qemu-img", "compare", "-q", "-f", "qcow2", "-F", "raw", d.RootfsPath(), raw)
		deltas += blocks(t, d.RootfsPath())
		if err := os.Remove(raw); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("du", "-s", "--block-size=1M", images).CombinedOutput()
	if err != nil {
		t.Fatalf("du: %v: %s", err, out)
	}
	baseBytes := blocks(t, base.RootfsPath())
	const mib = 1 << 20
	t.Logf("base image root file system: %d MiB allocated (%d MiB disk)", baseBytes/mib, base.DiskBytes()/mib)
	t.Logf("%d environments as full raw copies (before): %d MiB allocated (%d MiB each), %d MiB with the base",
		envs, full/mib, full/envs/mib, (full+baseBytes)/mib)
	t.Logf("%d environments as qcow2 deltas (after):     %d MiB allocated (%d MiB each), %d MiB with the base; du -s of the images directory: %s",
		envs, deltas/mib, deltas/envs/mib, (deltas+baseBytes)/mib, strings.Fields(string(out))[0]+" MiB")
	t.Logf("making a delta (qemu-img create + rebase) took %v each on average", (deltaTime / envs).Round(time.Millisecond))
	t.ReportMetric(float64(full)/mib, "MiB-full-copies")
	t.ReportMetric(float64(deltas)/mib, "MiB-deltas")
	if deltas >= full/2 {
		t.Errorf("deltas take %d MiB against %d MiB for full copies", deltas/mib, full/mib)
	}
}
