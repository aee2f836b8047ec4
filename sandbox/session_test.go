package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// fakeImageConfig is a configuration that validates without an image or QEMU, for
// tests of what a session does before it boots.
func fakeImageConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"vmlinux", "initrd.img", "rootfs.ext4"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not an image"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Config{
		Kernel: filepath.Join(dir, "vmlinux"), Initrd: filepath.Join(dir, "initrd.img"), Rootfs: filepath.Join(dir, "rootfs.ext4"),
		QEMU: "/bin/true", RunDir: t.TempDir(), StateDir: t.TempDir(),
	}
}

// TestSessionRefusals checks a session's order of calls without booting anything: what
// (Start, Run, CollectOut, SaveRootDisk) is refused before Start, after Kill and after
// Close, and that Close is idempotent and
// leaves no run record.
func TestSessionRefusals(t *testing.T) {
	tests := []struct {
		name string
		// before runs after Open; then Start, Run and CollectOut must fail with want.
		before func(s *Session) error
		want   string
	}{
		{"not started", nil, "not started"},
		{"killed", func(s *Session) error { return s.Kill() }, ErrKilled.Error()},
		{"closed", func(s *Session) error { return s.Close(context.Background()) }, "closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			cfg := fakeImageConfig(t)
			s, err := Open(ctx, SessionSpec{Config: cfg})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if s.ProxyAddr() != "" {
				t.Errorf("ProxyAddr without a proxy = %q, want empty", s.ProxyAddr())
			}
			if recs, _ := filepath.Glob(filepath.Join(cfg.StateDir, "runs", "*.json")); len(recs) != 1 {
				t.Errorf("run records after Open: %v, want one (the reaper's)", recs)
			}
			if tt.before != nil {
				if err := tt.before(s); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name != "not started" {
				if err := s.Start(ctx, ""); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Start = %v, want %q", err, tt.want)
				}
			}
			if _, err := s.Run(ctx, []string{"true"}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want %q", err, tt.want)
			}
			if _, err := s.CollectOut(t.TempDir()); err == nil {
				t.Error("CollectOut before any command succeeded")
			}
			dest := filepath.Join(t.TempDir(), "root.ext4")
			if err := s.SaveRootDisk(ctx, dest); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SaveRootDisk = %v, want %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 0 {
				t.Errorf("a refused SaveRootDisk wrote %v", entries)
			}
			for i := range 2 {
				if err := s.Close(ctx); err != nil {
					t.Errorf("Close %d: %v", i+1, err)
				}
			}
			if err := s.Kill(); err != nil {
				t.Errorf("Kill after Close: %v", err)
			}
			if recs, _ := filepath.Glob(filepath.Join(cfg.StateDir, "runs", "*.json")); len(recs) != 0 {
				t.Errorf("run records after Close: %v", recs)
			}
		})
	}
}

// TestSessionUseImage: the image is replaced before Start with files that exist, and
// the change is refused once the VM started (even if it failed to), after Kill and after
// Close, and when a file is missing (the old image stays).
func TestSessionUseImage(t *testing.T) {
	other := fakeImageConfig(t)
	want := BootImage{Kernel: other.Kernel, Initrd: other.Initrd, Rootfs: other.Rootfs, Cmdline: "console=ttyS0 other"}
	tests := []struct {
		name   string
		before func(ctx context.Context, s *Session) error
		im     BootImage
		want   string
	}{
		{name: "before start", im: want},
		{name: "a missing root file system", im: BootImage{Kernel: want.Kernel, Initrd: want.Initrd, Rootfs: want.Rootfs + ".gone"}, want: "Rootfs"},
		{name: "no kernel", im: BootImage{Initrd: want.Initrd, Rootfs: want.Rootfs}, want: "Kernel is empty"},
		{name: "after start", before: func(ctx context.Context, s *Session) error { _ = s.Start(ctx, ""); return nil }, im: want, want: ErrStarted.Error()},
		{name: "after kill", before: func(_ context.Context, s *Session) error { return s.Kill() }, im: want, want: ErrKilled.Error()},
		{name: "after close", before: func(ctx context.Context, s *Session) error { return s.Close(ctx) }, im: want, want: "closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			cfg := fakeImageConfig(t)
			s, err := Open(ctx, SessionSpec{Config: cfg})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close(ctx)
			if tt.before != nil {
				if err := tt.before(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			err = s.UseImage(tt.im)
			if tt.want == "" {
				if err != nil || s.cfg.Kernel != want.Kernel || s.cfg.Rootfs != want.Rootfs || s.cfg.Cmdline != want.Cmdline {
					t.Fatalf("UseImage = %v; config %+v", err, s.cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("UseImage = %v, want %q", err, tt.want)
			}
			if s.cfg.Rootfs != cfg.Rootfs {
				t.Fatalf("a refused UseImage changed the root file system to %s", s.cfg.Rootfs)
			}
		})
	}
}

func TestOpenRefusesABadConfig(t *testing.T) {
	cfg := fakeImageConfig(t)
	cfg.CPUs = 100
	if _, err := Open(testContext(t), SessionSpec{Config: cfg}); err == nil || !strings.Contains(err.Error(), "CPUs is 100") {
		t.Fatalf("Open = %v, want the configuration's problem", err)
	}
	if recs, _ := filepath.Glob(filepath.Join(cfg.StateDir, "runs", "*.json")); len(recs) != 0 {
		t.Errorf("a refused Open left run records: %v", recs)
	}
}

// sessionScripts share a way to count the leftovers of the first command: a process
// whose command line starts with one of these.
const countLeftovers = `count() { n=0; for f in /proc/[0-9]*/cmdline; do c=$( (tr '\0' ' ' < "$f") 2>/dev/null); case "$c" in "sleep 1000 "|"sh /tmp/ticker.sh ") n=$((n+1));; esac; done; echo "$n"; }
`

// TestSessionCommands runs three commands in one VM, cold and restored from a snapshot:
// the first writes to the workspace and /out and leaves two processes running (a sleep
// and a ticker that appends to a file every 0.2 s); the second sees the first's file,
// and finds the ticker's file no longer growing and neither process alive; the third
// replaces /out with less, and CollectOut returns only that. The restored case then
// breaks its snapshot: the next session's first command boots cold, and its second runs
// in that VM.
func TestSessionCommands(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	commands := []struct {
		script, want string
	}{
		{countLeftovers + `cat input.txt; echo from-first > made.txt
head -c 200000 /dev/urandom > /out/big; echo a > /out/a.txt
echo 'while :; do echo tick >> /tmp/ticks; sleep 0.2; done' > /tmp/ticker.sh
sh /tmp/ticker.sh >/dev/null 2>&1 &
sleep 1000 >/dev/null 2>&1 &
while [ "$(cat /tmp/ticks 2>/dev/null | wc -l)" -lt 2 ]; do sleep 0.1; done
echo "leftovers $(count)"`, "from host\nleftovers 2\n"},
		{countLeftovers + `cat made.txt
a=$(wc -l < /tmp/ticks); sleep 1; b=$(wc -l < /tmp/ticks)
if [ "$a" = "$b" ]; then echo "ticks stopped"; else echo "ticks grew from $a to $b"; fi
echo "leftovers $(count)"
rm /out/big /out/a.txt`, "from-first\nticks stopped\nleftovers 0\n"},
		{`echo third > /out/third.txt; echo done`, "done\n"},
	}
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(t *testing.T) {
			ctx := testContext(t)
			cfg := testImageConfig(t, im)
			if warm {
				cfg.SnapshotDir = filepath.Join(t.TempDir(), "snapshots")
				cfg.WorkspaceDiskMB = 512
			}
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "input.txt"), []byte("from host\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, SessionSpec{Config: cfg})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close(ctx)
			began := time.Now()
			if err := s.Start(ctx, ws); err != nil {
				t.Fatalf("Start: %v", err)
			}
			t.Logf("Start took %v (%s boot, snapshot made %v)", time.Since(began).Round(time.Millisecond), s.Report().Boot.Mode, s.Report().SnapshotMade)
			for i, c := range commands {
				var stdout, stderr bytes.Buffer
				began := time.Now()
				res, err := s.Run(ctx, []string{"sh", "-c", c.script}, nil, &stdout, &stderr)
				if err != nil {
					t.Fatalf("command %d: %v", i+1, err)
				}
				t.Logf("command %d took %v", i+1, time.Since(began).Round(time.Millisecond))
				if res.ExitCode != 0 || stdout.String() != c.want {
					t.Errorf("command %d: exit %d stdout %q (stderr %q, error %q), want 0 %q", i+1, res.ExitCode, stdout.String(), stderr.String(), res.Error, c.want)
				}
			}
			for i := range 3 {
				began := time.Now()
				if res, err := s.Run(ctx, []string{"true"}, nil, nil, nil); err != nil || res.ExitCode != 0 {
					t.Fatalf("true: %+v, %v", res, err)
				}
				t.Logf("true %d took %v", i+1, time.Since(began).Round(time.Millisecond))
			}
			dest := filepath.Join(t.TempDir(), "out")
			out, err := s.CollectOut(dest)
			if err != nil {
				t.Fatalf("CollectOut: %v", err)
			}
			if got := readDir(t, dest); !maps.Equal(got, map[string]string{"third.txt": "third\n"}) {
				t.Errorf("/out after the last command = %q, want only the third command's file", got)
			}
			rep := s.Report()
			if rep.Out != out || rep.Result.ExitCode != 0 || rep.Ready <= 0 || rep.FirstOutput < rep.Ready || len(rep.Steps) == 0 {
				t.Errorf("report %+v: want the last command's result, the /out report, steps and times", rep)
			}
			if want := map[bool]string{false: BootCold, true: BootWarm}[warm]; rep.Boot.Mode != want || rep.SnapshotMade != warm {
				t.Errorf("boot %+v, snapshot made %v; want %s, %v", rep.Boot, rep.SnapshotMade, want, warm)
			}
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			t.Logf("Close took %v", s.Report().Teardown.Round(time.Millisecond))
			assertNothingLeft(t, cfg.RunDir)
			if warm {
				brokenSnapshotSession(t, ctx, cfg, ws)
			}
		})
	}
}

// brokenSnapshotSession cuts the one snapshot in cfg.SnapshotDir short and runs two
// commands in a session: the first finds the snapshot broken and runs after a cold
// boot, the second in the same cold VM.
func brokenSnapshotSession(t *testing.T, ctx context.Context, cfg Config, ws string) {
	t.Helper()
	entries, err := os.ReadDir(cfg.SnapshotDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("snapshot dir holds %v (%v), want one snapshot", entries, err)
	}
	if err := os.Truncate(filepath.Join(cfg.SnapshotDir, entries[0].Name(), snapshotState), 4<<20); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, SessionSpec{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if err := s.Start(ctx, ws); err != nil {
		t.Fatalf("Start on a broken snapshot: %v", err)
	}
	for i, c := range []struct{ script, want string }{
		{"cat input.txt; echo second-session > made.txt", "from host\n"},
		{"cat made.txt", "second-session\n"},
	} {
		var stdout bytes.Buffer
		res, err := s.Run(ctx, []string{"sh", "-c", c.script}, nil, &stdout, nil)
		if err != nil || res.ExitCode != 0 || stdout.String() != c.want {
			t.Fatalf("command %d after a broken snapshot: %+v, %v, %q; want %q", i+1, res, err, stdout.String(), c.want)
		}
	}
	if rep := s.Report(); rep.Boot.Mode != BootCold || !strings.Contains(rep.SnapshotBroken, "failed to restore") {
		t.Errorf("report after a broken snapshot: boot %+v, broken %q; want cold, and why", rep.Boot, rep.SnapshotBroken)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	assertNothingLeft(t, cfg.RunDir)
}

// readDir returns the regular files under dir by relative path.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// testProxy starts a stand-in proxy: an HTTP server on the session's listen address
// that answers every request with the URL it was asked for, and records them.
type testProxy struct {
	mu      sync.Mutex
	urls    []string
	stopped bool
}

func (p *testProxy) start(_ context.Context, listen string) (func() error, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.urls = append(p.urls, r.URL.String())
		p.mu.Unlock()
		fmt.Fprintf(w, "PROXIED %s\n", r.URL)
	})}
	go srv.Serve(ln)
	return func() error {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		return srv.Close()
	}, nil
}

func (p *testProxy) seen() ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.urls...), p.stopped
}

// guestProxyGet asks the proxy named by $HTTP_PROXY for URL, as a guest program would,
// with what a minbase Debian has (bash's /dev/tcp).
const guestProxyGet = `p=${HTTP_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}" &&
printf 'GET %s HTTP/1.0\r\nHost: guest.example\r\n\r\n' "$URL" >&3 && cat <&3`

// TestSessionProxy: the proxy runs from Open, before any VM, at an address host
// processes reach; once the VM runs, its commands reach the same proxy through the
// address in their environment, command after command.
func TestSessionProxy(t *testing.T) {
	testgate.RequiresQEMU(t)
	testgate.RequiresRoot(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	// The shared state directory: its address leases keep this run's veth address apart
	// from those of other tests on the machine.
	cfg := testImageConfig(t, im)
	proxy := &testProxy{}
	s, err := Open(ctx, SessionSpec{Config: cfg, StartProxy: proxy.start})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close(ctx)
	if s.ProxyAddr() == "" {
		t.Fatal("ProxyAddr is empty with a proxy")
	}
	// Not through any proxy of the test's own environment.
	host := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := host.Get("http://" + s.ProxyAddr() + "/from-host")
	if err != nil {
		t.Fatalf("host GET to the session's proxy before Start: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "PROXIED /from-host\n" {
		t.Errorf("host GET answered %q", body)
	}
	if err := s.Start(ctx, ""); err != nil {
		t.Fatalf("Start: %v", err)
	}
	for i := range 2 {
		url := fmt.Sprintf("http://guest.example/%d", i+1)
		var stdout, stderr bytes.Buffer
		res, err := s.Run(ctx, []string{"bash", "-c", guestProxyGet}, []string{"URL=" + url}, &stdout, &stderr)
		if err != nil {
			t.Fatalf("command %d: %v", i+1, err)
		}
		if res.ExitCode != 0 || !strings.Contains(stdout.String(), "PROXIED "+url) {
			t.Errorf("command %d: exit %d stdout %q stderr %q, want the proxy's answer for %s", i+1, res.ExitCode, stdout.String(), stderr.String(), url)
		}
	}
	want := []string{"/from-host", "http://guest.example/1", "http://guest.example/2"}
	if got, _ := proxy.seen(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the proxy saw %v, want %v", got, want)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, stopped := proxy.seen(); !stopped {
		t.Error("Close did not stop the proxy")
	}
	assertNoNetworkLeft(t, s.id, cfg.StateDir)
}

// TestSessionKill kills a session while it boots and while a command runs: what was
// running returns an error saying so, Close succeeds, and no QEMU, run directory, network
// namespace (with the TAP and nftables table inside it), veth, TAP descriptor, run record
// or address lease is left.
func TestSessionKill(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	tests := []struct {
		name   string
		during string // "start" or "run"
	}{
		{"during a command", "run"},
		{"during the boot", "start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			cfg := testImageConfig(t, im)
			spec := SessionSpec{Config: cfg}
			if os.Geteuid() == 0 {
				spec.StartProxy = (&testProxy{}).start
			}
			tuns := openTUNs(t)
			s, err := Open(ctx, spec)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			switch tt.during {
			case "run":
				if err := s.Start(ctx, ""); err != nil {
					t.Fatalf("Start: %v", err)
				}
				started := make(chan struct{})
				done := make(chan error, 1)
				go func() {
					_, err := s.Run(ctx, []string{"sh", "-c", "echo started; sleep 600"}, nil, &signalWriter{ch: started}, nil)
					done <- err
				}()
				<-started
				if _, err := s.Run(ctx, []string{"true"}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "already running") {
					t.Errorf("a second Run while one runs = %v, want a refusal", err)
				}
				if err := s.Kill(); err != nil {
					t.Errorf("Kill: %v", err)
				}
				if err := <-done; !errors.Is(err, ErrKilled) {
					t.Errorf("the killed Run returned %v, want ErrKilled", err)
				}
			case "start":
				ws := t.TempDir()
				done := make(chan error, 1)
				go func() { done <- s.Start(ctx, ws) }()
				time.Sleep(500 * time.Millisecond) // somewhere in the boot; where does not matter
				if err := s.Kill(); err != nil {
					t.Errorf("Kill: %v", err)
				}
				if err := <-done; err != nil && !errors.Is(err, ErrKilled) {
					t.Errorf("the killed Start returned %v, want ErrKilled (or success, had it finished first)", err)
				}
			}
			if _, err := s.Run(ctx, []string{"true"}, nil, nil, nil); !errors.Is(err, ErrKilled) {
				t.Errorf("Run after Kill = %v, want ErrKilled", err)
			}
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close after Kill: %v", err)
			}
			assertNothingLeft(t, cfg.RunDir)
			assertNoNetworkLeft(t, s.id, cfg.StateDir)
			if got := openTUNs(t); got != tuns {
				t.Errorf("%d TAP descriptors open after Close, %d before Open", got, tuns)
			}
		})
	}
}

// assertNoNetworkLeft checks that a session's namespace (and so the TAP and nftables
// table inside it), host veth, run record and address lease are gone. The state
// directory may be shared with other runs: only this session's files count.
func assertNoNetworkLeft(t *testing.T, id, stateDir string) {
	t.Helper()
	ns, veth := netns.Names(id)
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
		t.Errorf("namespace %s left", ns)
	}
	if out, err := exec.Command("ip", "link", "show", veth).CombinedOutput(); err == nil {
		t.Errorf("veth %s left: %s", veth, out)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "runs", id+".json")); err == nil {
		t.Errorf("run record of %s left", id)
	}
	leases, _ := filepath.Glob(filepath.Join(netns.DefaultLeaseDir, "*"))
	for _, l := range leases {
		if b, err := os.ReadFile(l); err == nil && string(b) == id {
			t.Errorf("address lease %s of %s left", l, id)
		}
	}
}

// openTUNs counts this process's open descriptors of /dev/net/tun (each TAP a session
// holds is one).
func openTUNs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == "/dev/net/tun" {
			n++
		}
	}
	return n
}

// signalWriter closes ch at the first write.
type signalWriter struct {
	once sync.Once
	ch   chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}
