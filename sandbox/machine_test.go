package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

func testImageConfig(t *testing.T, im *image.Image) Config {
	t.Helper()
	return Config{
		Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(),
		Cmdline: im.Manifest().Cmdline, CPUs: 1, MemoryMB: 512,
		RunDir: t.TempDir(), StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"), Timeout: 2 * time.Minute,
	}
}

func testContext(t *testing.T) context.Context {
	log := zerolog.New(zerolog.NewTestWriter(t))
	return log.WithContext(t.Context())
}

func TestMachineRun(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "input.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		argv       []string
		workspace  string
		wantExit   int
		wantStdout string
		wantOut    map[string]string
		qemuUser   string
	}{
		{
			name:       "workspace in, out back, exit status",
			argv:       []string{"sh", "-c", `cat input.txt; id -u; pwd; echo result > /out/r.txt; echo oops >&2; exit 7`},
			workspace:  ws,
			wantExit:   7,
			wantStdout: "from host\n1000\n/workspace\n",
			wantOut:    map[string]string{"r.txt": "result\n"},
		},
		{
			name:       "no workspace, no network",
			argv:       []string{"sh", "-c", `ls /sys/class/net; test -w /etc/passwd && echo writable || echo read-only`},
			wantStdout: "lo\nread-only\n",
			wantOut:    map[string]string{},
		},
		{
			name:       "qemu as an unprivileged user",
			argv:       []string{"echo", "unprivileged"},
			workspace:  ws,
			wantStdout: "unprivileged\n",
			wantOut:    map[string]string{},
			qemuUser:   "nobody",
		},
	}
	// A secret in Bumper's environment must not reach QEMU's.
	t.Setenv("BUMPER_TEST_SECRET", "must-not-leak")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			cfg := testImageConfig(t, im)
			cfg.WorkspaceDir = tt.workspace
			if tt.qemuUser != "" {
				testgate.RequiresRoot(t)
				cfg.QEMUUser = tt.qemuUser
				cfg.RunDir = worldDir(t)
			}
			m, err := New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Start(ctx); err != nil {
				t.Fatalf("Start: %v", err)
			}
			t.Logf("accelerator %s: %s; steps %v", m.Accel().Accel, m.Accel().Reason, m.Steps())
			if err := m.Start(ctx); !errors.Is(err, ErrStarted) {
				t.Errorf("second Start = %v, want ErrStarted", err)
			}
			if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", m.cmd.Process.Pid)); err != nil || bytes.Contains(env, []byte("BUMPER_TEST_SECRET")) {
				t.Errorf("QEMU's environment (%v) holds Bumper's: %q", err, env)
			}
			var stdout, stderr bytes.Buffer
			res, err := m.Run(ctx, tt.argv, nil, &stdout, &stderr)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantExit || stdout.String() != tt.wantStdout {
				t.Errorf("exit %d stdout %q (stderr %q, error %q), want %d %q", res.ExitCode, stdout.String(), stderr.String(), res.Error, tt.wantExit, tt.wantStdout)
			}
			// A machine runs commands in turn; the /out of this one is read below.
			if res, err := m.Run(ctx, []string{"true"}, nil, &stdout, &stderr); err != nil || res.ExitCode != 0 {
				t.Errorf("a second Run on the machine = %+v, %v; want it run", res, err)
			}
			dest := filepath.Join(t.TempDir(), "out")
			rep, err := m.CollectOut(dest)
			if err != nil {
				t.Fatalf("CollectOut: %v", err)
			}
			if rep.Files != len(tt.wantOut) {
				t.Errorf("out report %+v, want %d files", rep, len(tt.wantOut))
			}
			for name, want := range tt.wantOut {
				if b, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(b) != want {
					t.Errorf("out %s = %q, %v; want %q", name, b, err, want)
				}
			}
			if tt.qemuUser != "" {
				assertQEMUUser(t, m, tt.qemuUser)
			}
			short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			if err := m.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Wait on a running machine with an expiring context = %v, want DeadlineExceeded", err)
			}
			cancel()
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Go(func() { errs[i] = m.Wait(ctx) })
			}
			if err := m.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Errorf("Wait: %v", err)
				}
			}
			assertNothingLeft(t, cfg.RunDir)
		})
	}
}

// TestWaitContext checks Wait's contract without a VM: an error before Start, ctx.Err()
// while the machine runs (from every waiter), then the machine's own error to all, even
// with a context that has ended since.
func TestWaitContext(t *testing.T) {
	m := &Machine{exited: make(chan struct{}), done: make(chan struct{})}
	if err := m.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("Wait before Start = %v, want not started", err)
	}
	m.started = true
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = m.Wait(ended) })
	}
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait with a canceled context on a running machine = %v, want context.Canceled", err)
		}
	}
	exitErr := errors.New("qemu failed: boom")
	waiting := make(chan error, 1)
	go func() { waiting <- m.Wait(t.Context()) }()
	m.finish(exitErr)
	if err := <-waiting; !errors.Is(err, exitErr) {
		t.Fatalf("Wait = %v, want the exit error", err)
	}
	if err := m.Wait(ended); !errors.Is(err, exitErr) {
		t.Fatalf("Wait with an ended context after the exit = %v, want the exit error", err)
	}
}

func TestMachineTimeout(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	cfg := testImageConfig(t, im)
	cfg.Timeout = 20 * time.Second
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := m.Run(ctx, []string{"sleep", "600"}, nil, &out, &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("result %+v, want a timeout", res)
	}
	if err := m.Wait(ctx); err != nil {
		t.Errorf("Wait: %v", err)
	}
	assertNothingLeft(t, cfg.RunDir)
}

// TestForkBombEnded attacks the machine as an agent that leaves a fork bomb at the
// process limit would: the result of its command says how many processes it left (the
// host's reason when what runs next fails), the guest ends them, and the next command
// runs as if nothing had been there. /out over its cap is said in the result, and
// nothing of it comes back.
func TestForkBombEnded(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	cfg := testImageConfig(t, im)
	cfg.MaxProcs, cfg.OutMaxBytes = 64, 1<<20
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Kill() }()
	var out bytes.Buffer
	// The shell forks until the limit refuses it (sh then exits 2, "Cannot fork"), and
	// leaves all but itself behind.
	res, err := m.Run(ctx, []string{"sh", "-c", `head -c 2000000 /dev/zero > /out/big; ` +
		`while :; do sleep 1000 </dev/null >/dev/null 2>&1 & done`}, nil, &out, &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Leftover != int(cfg.MaxProcs)-1 || res.KillError != "" {
		t.Fatalf("the bomb's result %+v (%q), want %d processes left, all ended", res, out.String(), cfg.MaxProcs-1)
	}
	if !strings.Contains(res.OutError, "more than the 1 MiB") {
		t.Errorf("the result says %q of /out, want that it is over its 1 MiB cap", res.OutError)
	}
	out.Reset()
	res, err = m.Run(ctx, []string{"sh", "-c", `git --version >/dev/null && rm /out/big && echo ran`}, nil, &out, &out)
	if err != nil || res.ExitCode != 0 || res.Leftover != 0 || res.OutError != "" || out.String() != "ran\n" {
		t.Fatalf("the next command: %+v, %v, output %q; want it run alone", res, err, out.String())
	}
}

// assertNothingLeft checks that a finished machine left no files and no QEMU behind.
func assertNothingLeft(t *testing.T, runDir string) {
	t.Helper()
	entries, _ := os.ReadDir(runDir)
	if len(entries) != 0 {
		t.Errorf("run directory still holds %d entries", len(entries))
	}
	out, _ := exec.Command("pgrep", "-f", runDir).Output()
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("QEMU processes still running for %s: %s", runDir, s)
	}
}

// worldDir returns a temporary directory another user can traverse (t.TempDir's parents
// are private to root).
func worldDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "bumper-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// assertQEMUUser checks that the machine's QEMU runs as the named user.
func assertQEMUUser(t *testing.T, m *Machine, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "Uid:" {
			if f[1] != u.Uid || f[2] != u.Uid {
				t.Errorf("QEMU runs as uid %s/%s, want %s (%s)", f[1], f[2], u.Uid, name)
			}
			return
		}
	}
	t.Error("no Uid line for QEMU")
}

// TestStartFailureCleansUp boots a kernel that is not one: Start must fail with QEMU's
// reason and leave nothing behind.
func TestStartFailureCleansUp(t *testing.T) {
	testgate.RequiresQEMU(t)
	dir := t.TempDir()
	for _, f := range []string{"vmlinux", "initrd.img", "rootfs.ext4"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not a kernel"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{
		Kernel: filepath.Join(dir, "vmlinux"), Initrd: filepath.Join(dir, "initrd.img"), Rootfs: filepath.Join(dir, "rootfs.ext4"),
		Accel: AccelTCG, RunDir: t.TempDir(), StateDir: t.TempDir(), MemoryMB: 256, CPUs: 1,
	}
	ctx := testContext(t)
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "qemu") {
		t.Fatalf("Start = %v, want a QEMU failure", err)
	}
	if err := m.Wait(ctx); err == nil {
		t.Error("Wait after a failed Start returned no error")
	}
	assertNothingLeft(t, cfg.RunDir)
	if recs, _ := filepath.Glob(filepath.Join(cfg.StateDir, "runs", "*.json")); len(recs) != 0 {
		t.Errorf("run records left: %v", recs)
	}
}

// TestRootDiskGrows gives the VM a root disk larger than the template and checks that
// the guest's root filesystem uses it.
func TestRootDiskGrows(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	cfg := testImageConfig(t, im)
	info, err := os.Stat(cfg.Rootfs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DiskSizeMB = int(info.Size()>>20) + 1024
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Kill()
	var out, errOut bytes.Buffer
	res, err := m.Run(ctx, []string{"sh", "-c", "df -k / | awk 'NR==2 {print $2}'"}, nil, &out, &errOut)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v %+v %s", err, res, errOut.String())
	}
	kb, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("df output %q: %v", out.String(), err)
	}
	if min := (cfg.DiskSizeMB - 100) << 10; kb < min {
		t.Errorf("root filesystem is %d KiB, want at least %d (disk %d MiB)", kb, min, cfg.DiskSizeMB)
	}
}

// TestQEMUOutlivesTheThreadThatStartedIt starts a machine from a goroutine that holds
// its OS thread and returns without letting go of it, so Go ends that thread. QEMU's
// Pdeathsig follows the starting thread, not the process (golang/go#27505); the machine
// must still run its command.
func TestQEMUOutlivesTheThreadThatStartedIt(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	m, err := New(ctx, testImageConfig(t, im))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	tid := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread ends with the goroutine
		tid <- syscall.Gettid()
		started <- m.Start(ctx)
	}()
	if err := <-started; err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = m.Kill() }()
	// The command runs only once the starting thread is gone from the process.
	task := fmt.Sprintf("/proc/self/task/%d", <-tid)
	// A generous deadline, polled without spinning: on a loaded machine under -race the
	// exiting thread may wait long for a core, and a spinning poll takes one from it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread that started the machine (%s) did not end within a minute", task)
		}
	}
	var out bytes.Buffer
	res, err := m.Run(ctx, []string{"echo", "alive"}, nil, &out, io.Discard)
	if err != nil || res.ExitCode != 0 || out.String() != "alive\n" {
		t.Fatalf("Run after the starting thread ended = %+v, %v, %q; want the VM alive", res, err, out.String())
	}
}
