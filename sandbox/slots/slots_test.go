package slots

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// deadline bounds every wait in these tests: generous, since the machine is shared.
const deadline = 2 * time.Minute

// Environment of the helper process (the test binary run again, see TestMain).
const (
	helperDir = "SLOTS_TEST_HELPER_DIR"
	helperMax = "SLOTS_TEST_HELPER_MAX_VMS"
	helperMem = "SLOTS_TEST_HELPER_MEMORY_MB"
	helperVM  = "SLOTS_TEST_HELPER_VM_MB"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDir); dir != "" {
		os.Exit(helper(dir))
	}
	os.Exit(m.Run())
}

// helper is one run on the host: it asks for a slot, says "waiting" once it waits and
// "acquired" once it holds it, holds it until its standard input closes, then releases
// it and says "released".
func helper(dir string) int {
	maxVMs, _ := strconv.Atoi(os.Getenv(helperMax))
	mem, _ := strconv.Atoi(os.Getenv(helperMem))
	need, _ := strconv.Atoi(os.Getenv(helperVM))
	h, err := New(Limits{MaxVMs: maxVMs, MemoryMB: mem, Dir: dir}, WithPoll(20*time.Millisecond))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	var once sync.Once
	s, err := h.Acquire(context.Background(), need, func(Wait) { once.Do(func() { fmt.Println("waiting") }) })
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("acquired")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Release(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("released")
	return 0
}

// run is a helper process and what it said.
type run struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	said  []string
	done  chan struct{}
}

func (r *run) has(word string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.said {
		if s == word {
			return true
		}
	}
	return false
}

func (r *run) lines() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.said, "; ")
}

// start runs a helper asking for a VM of vmMB on a host of lim.
func start(t *testing.T, name string, lim Limits, vmMB int) *run {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperDir+"="+lim.Dir, helperMax+"="+strconv.Itoa(lim.MaxVMs),
		helperMem+"="+strconv.Itoa(lim.MemoryMB), helperVM+"="+strconv.Itoa(vmMB))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &run{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.mu.Lock()
			r.said = append(r.said, sc.Text())
			r.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
	})
	return r
}

// await polls until cond holds, or fails the test after deadline.
func await(t *testing.T, what string, cond func() bool, runs ...*run) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			var b strings.Builder
			for _, r := range runs {
				fmt.Fprintf(&b, "\n%s said: %s", r.name, r.lines())
			}
			t.Fatalf("after %v, still not: %s%s", deadline, what, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAcrossProcesses: runs in separate processes share the host's limit (here its
// memory: two VMs of 1024 MiB in 2048), the waiting ones start in the order they asked,
// a run that gives its slot back lets the first waiting one start, and so does a holder
// killed with SIGKILL: the kernel drops its lock, and the next run finds its claim void.
// A waiting run killed with SIGKILL holds up no one behind it.
func TestAcrossProcesses(t *testing.T) {
	lim := Limits{MaxVMs: 3, MemoryMB: 2048, Dir: t.TempDir()}
	a := start(t, "a", lim, 1024)
	b := start(t, "b", lim, 1024)
	await(t, "a and b hold a slot each", func() bool { return a.has("acquired") && b.has("acquired") }, a, b)

	c := start(t, "c", lim, 1024)
	await(t, "c waits", func() bool { return c.has("waiting") }, c)
	x := start(t, "x", lim, 1024)
	await(t, "x waits", func() bool { return x.has("waiting") }, x)
	d := start(t, "d", lim, 1024)
	await(t, "d waits", func() bool { return d.has("waiting") }, d)

	// x, second in line, dies waiting: its ticket must not hold d up.
	if err := x.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-x.done

	// a gives its slot back: c, first in line, takes it; d still waits.
	_ = a.stdin.Close()
	await(t, "a released and c acquired", func() bool { return a.has("released") && c.has("acquired") }, a, c, d)
	if d.has("acquired") {
		t.Fatalf("d, behind c in line, took the slot as well: the host now runs more than its memory allows (d said: %s)", d.lines())
	}
	u := usage(t, lim)
	if u.VMs != 2 || u.MemoryMB != 2048 || u.Waiting != 1 {
		t.Fatalf("usage = %+v; want b and c holding 2048 MiB, d waiting", u)
	}

	// b is killed holding its slot: d gets it.
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.done
	await(t, "d acquired the slot b held when it was killed", func() bool { return d.has("acquired") }, d)

	_ = c.stdin.Close()
	_ = d.stdin.Close()
	await(t, "c and d released", func() bool { return c.has("released") && d.has("released") }, c, d)
	if u := usage(t, lim); u != (Usage{}) {
		t.Fatalf("usage after every run ended = %+v; want none", u)
	}
	left, _ := filepath.Glob(filepath.Join(lim.Dir, "*-*"))
	if len(left) > 0 {
		t.Fatalf("claims left behind: %v", left)
	}
}

// TestFirstInLine: a large VM first in line is not passed by a small one behind it that
// would fit: no run waits for ever.
func TestFirstInLine(t *testing.T) {
	lim := Limits{MaxVMs: 4, MemoryMB: 2048, Dir: t.TempDir()}
	hold := start(t, "hold", lim, 1024)
	await(t, "hold acquired", func() bool { return hold.has("acquired") }, hold)
	big := start(t, "big", lim, 2048)
	await(t, "big waits", func() bool { return big.has("waiting") }, big)
	small := start(t, "small", lim, 512)
	await(t, "small waits", func() bool { return small.has("waiting") }, small)

	_ = hold.stdin.Close()
	await(t, "big acquired", func() bool { return big.has("acquired") }, big, small)
	if small.has("acquired") {
		t.Fatal("small acquired beside big: over the memory limit")
	}
	_ = big.stdin.Close()
	await(t, "small acquired", func() bool { return small.has("acquired") }, big, small)
}

func usage(t *testing.T, lim Limits) Usage {
	t.Helper()
	h, err := New(lim)
	if err != nil {
		t.Fatal(err)
	}
	u, err := h.Usage()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCount: the count limit holds whatever memory is left; each waiting look reports
// what the host holds and the run's place.
func TestCount(t *testing.T) {
	lim := Limits{MaxVMs: 1, MemoryMB: 8192, Dir: t.TempDir()}
	h, err := New(lim, WithPoll(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	first, err := h.Acquire(context.Background(), 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan Wait, 1)
	got := make(chan *Slot, 1)
	go func() {
		s, err := h.Acquire(context.Background(), 1024, func(w Wait) {
			select {
			case seen <- w:
			default:
			}
		})
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	w := <-seen
	if w.Used != (Usage{VMs: 1, MemoryMB: 1024, Waiting: 1}) || w.Ahead != 0 || w.NeedMB != 1024 {
		t.Fatalf("wait = %+v", w)
	}
	line := w.String()
	for _, s := range []string{"waiting for a VM slot: 1 of 1 VMs (1024 of 8192 MiB) in use on this runner host", "next in line", EnvMaxVMs} {
		if !strings.Contains(line, s) {
			t.Errorf("line %q does not say %q", line, s)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("a second Release: %v", err)
	}
	second := <-got
	if second == nil {
		t.Fatal("no slot")
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestWaitEndsWithContext: a run stopped while it waits leaves nothing behind, and the
// run behind it is not held up.
func TestWaitEndsWithContext(t *testing.T) {
	lim := Limits{MaxVMs: 1, MemoryMB: 2048, Dir: t.TempDir()}
	h, err := New(lim, WithPoll(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	holder, err := h.Acquire(context.Background(), 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped by /stop")
	waited := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := h.Acquire(ctx, 1024, func(Wait) { once.Do(func() { close(waited) }) })
		errc <- err
	}()
	<-waited
	cancel(stop)
	if err := <-errc; !errors.Is(err, stop) || !strings.Contains(err.Error(), "stopped waiting for a VM slot") {
		t.Fatalf("Acquire = %v; want the context's cause", err)
	}
	if u, err := h.Usage(); err != nil || u != (Usage{VMs: 1, MemoryMB: 1024}) {
		t.Fatalf("usage = %+v, %v; want the holder alone, no one waiting", u, err)
	}
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	next, err := h.Acquire(context.Background(), 2048, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = next.Release()
}

// TestTooLarge: a VM larger than the host allows all its VMs fails at once, saying what
// to set, instead of waiting for ever.
func TestTooLarge(t *testing.T) {
	h, err := New(Limits{MaxVMs: 2, MemoryMB: 1024, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Acquire(context.Background(), 2048, nil)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), EnvMemoryMB+"=1024") {
		t.Fatalf("Acquire = %v; want ErrTooLarge naming %s", err, EnvMemoryMB)
	}
}

// TestDirectory: the directory is made private to its user; one others may write is made
// so, one of another user is refused, and bad limits are refused before anything.
func TestDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "slots")
	if _, err := New(Limits{MaxVMs: 1, MemoryMB: 1024, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Limits{MaxVMs: 1, MemoryMB: 1024, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("a world-writable directory stayed %v", fi.Mode())
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Limits{MaxVMs: 1, MemoryMB: 1024, Dir: dir}); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Fatalf("New on another user's directory = %v; want a refusal", err)
		}
	}
	if _, err := New(Limits{MaxVMs: 0, MemoryMB: 64, Dir: "rel"}); err == nil ||
		!strings.Contains(err.Error(), EnvMaxVMs) || !strings.Contains(err.Error(), EnvMemoryMB) || !strings.Contains(err.Error(), EnvDir) {
		t.Fatalf("New with bad limits = %v", err)
	}
}
