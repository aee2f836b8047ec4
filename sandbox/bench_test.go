package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// benchRuns is how many times each figure is measured; the median is reported.
const benchRuns = 5

// firstOutput is a writer that records when its first byte arrives.
type firstOutput struct {
	mu    sync.Mutex
	at    time.Time
	bytes bytes.Buffer
}

func (f *firstOutput) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() {
		f.at = time.Now()
	}
	return f.bytes.Write(p)
}

// BenchmarkSandbox measures, under whatever accelerator the machine gets (TCG here), the
// medians of benchRuns runs of: cold boot to first command output, warm restore to first
// command output, teardown, and `git clone` of a 50 MB repository inside the VM. Run it
// with: go test -run '^$' -bench Sandbox -benchtime 1x ./sandbox/
func BenchmarkSandbox(b *testing.B) {
	testgate.RequiresQEMU(b)
	testgate.Command(b, "git", "git")
	im := imagetest.Image(b)
	ctx := zerolog.Nop().WithContext(context.Background())
	base := Config{
		Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline,
		CPUs: 2, MemoryMB: 1024, RunDir: b.TempDir(), StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"),
		Timeout: 5 * time.Minute, SnapshotDir: filepath.Join(b.TempDir(), "snapshots"), WorkspaceDiskMB: 1024,
	}
	if _, err := PrepareSnapshot(ctx, base); err != nil {
		b.Fatalf("PrepareSnapshot: %v", err)
	}
	repoDir := makeRepo(b, 50<<20)

	var cold, warm, teardown, clone, wsDisk []time.Duration
	var accel string
	for range b.N {
		for range benchRuns {
			c := base
			c.SnapshotDir = ""
			d, _, m := timeToFirstCommand(ctx, b, c, []string{"echo", "go"})
			cold = append(cold, d)
			accel = m.Accel().Accel
			if err := m.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}

			d, td, _ := timeToFirstCommand(ctx, b, base, []string{"echo", "go"})
			warm = append(warm, d)
			teardown = append(teardown, td)

			c = base
			c.WorkspaceDir = repoDir
			start := time.Now()
			m, err := New(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Start(ctx); err != nil {
				b.Fatal(err)
			}
			for _, s := range m.Steps() {
				if s.Name == StepWorkspaceDisk {
					wsDisk = append(wsDisk, s.Duration)
				}
			}
			var out bytes.Buffer
			res, err := m.Run(ctx, []string{"sh", "-c", `s=$(date +%s%N); git clone -q file:///workspace/src.git /workspace/clone && e=$(date +%s%N) && echo $(( (e - s) / 1000000 ))`}, nil, &out, &out)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("git clone in the VM: %v %+v %s", err, res, out.String())
			}
			ms, err := strconv.Atoi(strings.TrimSpace(out.String()))
			if err != nil {
				b.Fatalf("git clone timing %q: %v", out.String(), err)
			}
			clone = append(clone, time.Duration(ms)*time.Millisecond)
			_ = start
			if err := m.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	mc, mw, mt, mg, md := median(cold), median(warm), median(teardown), median(clone), median(wsDisk)
	b.ReportMetric(ms(mc), "cold-ms")
	b.ReportMetric(ms(mw), "warm-ms")
	b.ReportMetric(ms(mt), "teardown-ms")
	b.ReportMetric(ms(mg), "clone50MB-ms")
	b.ReportMetric(float64(mc)/float64(mw), "warm-speedup")
	fmt.Fprintf(os.Stderr, "\nsandbox benchmark (%s, %d runs each, medians)\n", accel, len(cold))
	fmt.Fprintf(os.Stderr, "  cold boot to first command   %8.0f ms  %v\n", ms(mc), cold)
	fmt.Fprintf(os.Stderr, "  warm restore to first command%8.0f ms  %v\n", ms(mw), warm)
	fmt.Fprintf(os.Stderr, "  warm speed-up                %8.1f x\n", float64(mc)/float64(mw))
	fmt.Fprintf(os.Stderr, "  teardown (shutdown+cleanup)  %8.0f ms  %v\n", ms(mt), teardown)
	fmt.Fprintf(os.Stderr, "  git clone 50 MB in the VM    %8.0f ms  %v\n", ms(mg), clone)
	fmt.Fprintf(os.Stderr, "  workspace disk (mkfs -d)     %8.0f ms  %v\n", ms(md), wsDisk)
}

// timeToFirstCommand starts a machine, runs argv and returns the time from New to the
// command's first output, and how long Shutdown took (the machine is shut down).
func timeToFirstCommand(ctx context.Context, b *testing.B, cfg Config, argv []string) (time.Duration, time.Duration, *Machine) {
	b.Helper()
	start := time.Now()
	m, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	out := &firstOutput{}
	res, err := m.Run(ctx, argv, nil, out, io.Discard)
	if err != nil || res.ExitCode != 0 || out.at.IsZero() {
		b.Fatalf("run %v: %v %+v", argv, err, res)
	}
	d := out.at.Sub(start)
	down := time.Now()
	if err := m.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	return d, time.Since(down), m
}

// makeRepo creates a bare git repository of about size bytes of incompressible data in
// a fresh directory (as src.git) and returns the directory.
func makeRepo(b *testing.B, size int) string {
	b.Helper()
	dir := b.TempDir()
	work := filepath.Join(b.TempDir(), "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const fileSize = 1 << 20
	buf := make([]byte, fileSize)
	for i := 0; i < size/fileSize; i++ {
		for j := 0; j < len(buf); j += 8 {
			v := r.Uint64()
			for k := 0; k < 8; k++ {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		if err := os.WriteFile(filepath.Join(work, fmt.Sprintf("blob%03d.bin", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"-C", work, "init", "-q"},
		{"-C", work, "add", "."},
		{"-C", work, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "data"},
		{"clone", "-q", "--bare", work, filepath.Join(dir, "src.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSession measures commands in one VM, cold-booted and restored: the medians
// over benchRuns sessions of the time from Run to the first output of `echo go` as the
// session's first command (a restore's state still loading, the guest's one-time setup)
// and as its second and third (the VM already running). Run it with:
// go test -run '^$' -bench Session -benchtime 1x ./sandbox/
func BenchmarkSession(b *testing.B) {
	testgate.RequiresQEMU(b)
	im := imagetest.Image(b)
	ctx := zerolog.Nop().WithContext(context.Background())
	base := Config{
		Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline,
		CPUs: 2, MemoryMB: 1024, RunDir: b.TempDir(), StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"),
		Timeout: 5 * time.Minute, SnapshotDir: filepath.Join(b.TempDir(), "snapshots"), WorkspaceDiskMB: 1024,
	}
	if _, err := PrepareSnapshot(ctx, base); err != nil {
		b.Fatalf("PrepareSnapshot: %v", err)
	}
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{BootCold, BootWarm} {
		cfg := base
		if mode == BootCold {
			cfg.SnapshotDir = ""
		}
		times := make([][]time.Duration, 3) // by command
		for range b.N {
			for range benchRuns {
				s, err := Open(ctx, SessionSpec{Config: cfg})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Start(ctx, ws); err != nil {
					b.Fatal(err)
				}
				for i := range times {
					out := &firstOutput{}
					start := time.Now()
					res, err := s.Run(ctx, []string{"echo", "go"}, nil, out, io.Discard)
					if err != nil || res.ExitCode != 0 || out.at.IsZero() {
						b.Fatalf("%s session, command %d: %v %+v", mode, i+1, err, res)
					}
					times[i] = append(times[i], out.at.Sub(start))
				}
				if got := s.Report().Boot.Mode; got != mode {
					b.Fatalf("session booted %s, want %s", got, mode)
				}
				if err := s.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "\nsession benchmark, %s (%d sessions, medians from Run to first output)\n", mode, len(times[0]))
		for i, ts := range times {
			b.ReportMetric(ms(median(ts)), fmt.Sprintf("%s-cmd%d-ms", mode, i+1))
			fmt.Fprintf(os.Stderr, "  command %d  %6.0f ms  %v\n", i+1, ms(median(ts)), ts)
		}
	}
}
