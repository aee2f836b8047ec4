package envbuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// benchStarts is how many warm and cold starts each image gets; medians are reported.
const benchStarts = 5

// BenchmarkEnvironment measures the Go example's environment (testdata/gotoolchain) side by
// side with the base image, in one run: the environment's first build (the base image
// with golang-go cached; the setup downloads the Go release and warms the caches) and
// the builds that find it again; the root filesystems of the base image, of the base
// image with golang-go and of the environment's image (file, on disk, used, free); and
// starts, cold and warm (a snapshot restored), to the first output of `echo go` in the
// base image and in the environment's image, and of `go version` in the environment's
// image. It needs what TestGoToolchain needs. Run it as root with:
// go test -run '^$' -bench Environment -benchtime 1x -timeout 60m ./action/envbuild/
func BenchmarkEnvironment(b *testing.B) {
	testgate.RequiresRoot(b)
	testgate.RequiresQEMU(b)
	imagetest.SkipUnlessCanBuild(b)
	access := goProxy(b, goRelease)
	ctx := zerolog.Nop().WithContext(context.Background())
	load := loadAverage()

	dir, env := goModule(b, fmt.Sprintf("bench %d", time.Now().UnixNano()), goRelease)
	o := goOptions(b, access, dir, env)
	// The images compared are built alike: the same agent, and the same extra CA (if any).
	plain, err := image.Build(ctx, o.Image)
	if err != nil {
		b.Fatal(err)
	}
	withGoCfg := o.Image
	withGoCfg.Packages = env.Packages
	withGo, err := image.Build(ctx, withGoCfg)
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	first, err := Build(ctx, o)
	if err != nil {
		b.Fatalf("first build: %v", err)
	}
	firstBuild := time.Since(start)
	b.Cleanup(func() { os.RemoveAll(first.Image.Dir()) })
	if !first.Built {
		b.Fatal("the first build found an image: the run's key was not new")
	}
	var found []time.Duration
	for range 3 {
		start := time.Now()
		again, err := Build(ctx, goOptions(b, access, dir, env))
		if err != nil || again.Built {
			b.Fatalf("build again: %v (built %v)", err, again != nil && again.Built)
		}
		found = append(found, time.Since(start))
	}

	sizes := map[string]rootfsSize{}
	for name, im := range map[string]*image.Image{"base": plain, "golang-go": withGo, "environment": first.Image} {
		if sizes[name], err = measureRootfs(im.RootfsPath()); err != nil {
			b.Fatal(err)
		}
	}

	vm := func(im *image.Image) sandbox.Config {
		return sandbox.Config{
			Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline,
			CPUs: 2, MemoryMB: 1024, Accel: sandbox.AccelTCG, RunDir: b.TempDir(),
			StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"), Timeout: 5 * time.Minute,
			SnapshotDir: filepath.Join(b.TempDir(), "snapshots"), WorkspaceDiskMB: 1024,
		}
	}
	baseVM, envVM := vm(plain), vm(first.Image)
	for _, c := range []sandbox.Config{baseVM, envVM} {
		if _, err := sandbox.PrepareSnapshot(ctx, c); err != nil {
			b.Fatalf("PrepareSnapshot for %s: %v", c.Rootfs, err)
		}
	}
	starts := []struct {
		name string
		cfg  sandbox.Config
		argv []string
	}{
		{"base image, echo go", baseVM, []string{"echo", "go"}},
		{"environment, echo go", envVM, []string{"echo", "go"}},
		{"environment, go version", envVM, []string{"go", "version"}},
	}
	warm := make([][]time.Duration, len(starts))
	cold := make([][]time.Duration, len(starts))
	var accel string
	for range b.N {
		// Interleaved, so the images share whatever else the machine is doing.
		for range benchStarts {
			for i, s := range starts {
				d, _ := firstOutputAfter(ctx, b, s.cfg, s.argv, sandbox.BootWarm)
				warm[i] = append(warm[i], d)
				c := s.cfg
				c.SnapshotDir = ""
				d, accel = firstOutputAfter(ctx, b, c, s.argv, sandbox.BootCold)
				cold[i] = append(cold[i], d)
			}
		}
	}

	b.ReportMetric(seconds(firstBuild), "first-build-s")
	b.ReportMetric(seconds(median(found)), "found-s")
	b.ReportMetric(float64(sizes["environment"].onDisk)/(1<<20), "env-rootfs-MiB")
	w := os.Stderr
	fmt.Fprintf(w, "\nenvironment benchmark: %s (%s, %d host CPUs, VMs of 2 vCPUs and 1 GiB under %s); load average %s before, %s after\n",
		env.Setup, goRelease, runtime.NumCPU(), accel, load, loadAverage())
	fmt.Fprintf(w, "  first build (base image cached)       %8.1f s  (setup session %.1f s)\n", seconds(firstBuild), seconds(first.Setup))
	fmt.Fprintf(w, "  found again (median of %d)             %8.2f s  %v\n", len(found), seconds(median(found)), found)
	fmt.Fprintf(w, "  root filesystem      %10s %10s %10s %10s\n", "file", "on disk", "used", "free")
	for _, name := range []string{"base", "golang-go", "environment"} {
		s := sizes[name]
		fmt.Fprintf(w, "    %-18s %6d MiB %6d MiB %6d MiB %6d MiB\n", name, s.file>>20, s.onDisk>>20, s.used>>20, s.free>>20)
	}
	fmt.Fprintf(w, "  start to first output (%d each, medians)     warm        cold\n", benchStarts)
	for i, s := range starts {
		fmt.Fprintf(w, "    %-30s %8.0f ms %8.0f ms  %v %v\n", s.name, ms(median(warm[i])), ms(median(cold[i])), warm[i], cold[i])
	}
}

// firstOutputAfter starts a VM of cfg, runs argv and returns the time from New to the
// command's first output, and the accelerator used; it fails unless the VM booted as mode.
func firstOutputAfter(ctx context.Context, b *testing.B, cfg sandbox.Config, argv []string, mode string) (time.Duration, string) {
	b.Helper()
	start := time.Now()
	m, err := sandbox.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := m.Shutdown(ctx); err != nil {
			b.Error(err)
		}
	}()
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if got := m.Boot(); got.Mode != mode {
		b.Fatalf("booted %s (%s), want %s", got.Mode, got.Reason, mode)
	}
	out := &firstWrite{}
	res, err := m.Run(ctx, argv, nil, out, io.Discard)
	if err != nil || res.ExitCode != 0 || out.at.IsZero() {
		b.Fatalf("%v: %v %+v", argv, err, res)
	}
	return out.at.Sub(start), m.Accel().Accel
}

// firstWrite records when its first byte arrives.
type firstWrite struct {
	mu sync.Mutex
	at time.Time
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() {
		f.at = time.Now()
	}
	return len(p), nil
}

// rootfsSize is a root filesystem image's size: the file's length, the blocks it takes on
// the host's disk (it is sparse), and what the ext4 filesystem inside has in use and free.
type rootfsSize struct{ file, onDisk, used, free int64 }

func measureRootfs(path string) (rootfsSize, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return rootfsSize{}, fmt.Errorf("failed to stat %s: %w", path, err)
	}
	out, err := exec.Command("dumpe2fs", "-h", path).Output()
	if err != nil {
		return rootfsSize{}, fmt.Errorf("dumpe2fs -h %s: %w", path, err)
	}
	field := func(name string) int64 {
		for line := range bytes.Lines(out) {
			if v, ok := strings.CutPrefix(string(line), name+":"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
		return 0
	}
	bs := field("Block size")
	free := field("Free blocks") * bs
	return rootfsSize{file: st.Size, onDisk: st.Blocks * 512, used: field("Block count")*bs - free, free: free}, nil
}

// loadAverage is the host's 1-, 5- and 15-minute load average, to say what else ran.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
