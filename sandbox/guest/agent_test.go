package guest

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

type fakeSystem struct {
	mu      sync.Mutex
	clock   time.Time
	network *agentproto.Network
	mounted string
	grown   bool
	dropped int
	// calls names every call in order (killed ones as "kill <uid>").
	calls []string
	// mountErr and killErr, when set, are what MountWorkspace and KillUser return;
	// left is how many processes KillUser says it found.
	mountErr, killErr error
	left              int
}

func (f *fakeSystem) record(call string) {
	f.calls = append(f.calls, call)
}

func (f *fakeSystem) SetClock(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("clock")
	f.clock = t
	return nil
}

func (f *fakeSystem) ConfigureNetwork(n agentproto.Network) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("network")
	f.network = &n
	return nil
}

func (f *fakeSystem) MountWorkspace(dir string, _, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("mount")
	if f.mountErr != nil {
		return f.mountErr
	}
	f.mounted = dir
	return nil
}

func (f *fakeSystem) KillUser(uid int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(fmt.Sprintf("kill %d", uid))
	return f.left, f.killErr
}

func (f *fakeSystem) DropCaches() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("drop")
	f.dropped++
	return nil
}

func (f *fakeSystem) GrowRoot() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("grow")
	f.grown = true
	return nil
}

// callLog returns the calls so far.
func (f *fakeSystem) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type session struct {
	stdout, stderr strings.Builder
	result         agentproto.Result
}

// drive plays the host: it reads hello, sends req, collects frames until the result,
// then sends shutdown.
func drive(t *testing.T, r *agentproto.Reader, w *agentproto.Writer, req *agentproto.Run) *session {
	t.Helper()
	f, err := r.Read()
	if err != nil || f.Type != agentproto.TypeHello {
		t.Fatalf("first frame = %v %v, want hello", f.Type, err)
	}
	s := runOne(t, r, w, req)
	if err := w.Write(agentproto.TypeShutdown, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// runOne sends req and collects frames until its result.
func runOne(t *testing.T, r *agentproto.Reader, w *agentproto.Writer, req *agentproto.Run) *session {
	t.Helper()
	s := &session{}
	payload, err := agentproto.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(agentproto.TypeRun, payload); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := r.Read()
		if err != nil {
			t.Fatalf("reading agent frames: %v", err)
		}
		switch f.Type {
		case agentproto.TypeHello:
			// Repeats until the agent has read the run request.
		case agentproto.TypeStdout:
			s.stdout.Write(f.Payload)
		case agentproto.TypeStderr:
			s.stderr.Write(f.Payload)
		case agentproto.TypeResult:
			if err := agentproto.Decode(f.Payload, &s.result); err != nil {
				t.Fatalf("decoding result: %v", err)
			}
			return s
		}
	}
}

func readTar(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string]string{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("reading out tar: %v", err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
}

func TestAgentRun(t *testing.T) {
	tests := []struct {
		name       string
		argv       []string
		env        []string
		network    *agentproto.Network
		outMax     int64
		wantExit   int
		wantSignal string
		wantStdout string
		wantStderr string
		wantErr    string
		wantOutErr string
		wantFiles  map[string]string
		growRoot   bool
	}{
		{
			name:       "exit status and streams",
			argv:       []string{"sh", "-c", "echo out; echo err >&2; exit 3"},
			outMax:     1 << 20,
			wantExit:   3,
			wantStdout: "out\n",
			wantStderr: "err\n",
			wantFiles:  map[string]string{},
		},
		{
			name:       "env and working directory",
			argv:       []string{"sh", "-c", `echo "$PROXY_TEST $(basename "$PWD")"`},
			env:        []string{"PROXY_TEST=http://10.0.2.2:3128"},
			outMax:     1 << 20,
			wantStdout: "http://10.0.2.2:3128 workspace\n",
			wantFiles:  map[string]string{},
		},
		{
			name:      "out files and no special files",
			growRoot:  true,
			argv:      []string{"sh", "-c", `echo data > "$OUT/a.txt"; mkdir "$OUT/d"; echo x > "$OUT/d/b"; mkfifo "$OUT/fifo"`},
			network:   &agentproto.Network{Address: "10.0.2.15/24", Gateway: "10.0.2.2"},
			outMax:    1 << 20,
			wantFiles: map[string]string{"a.txt": "data\n", "d": "", "d/b": "x\n"},
		},
		{
			name:       "out over cap",
			argv:       []string{"sh", "-c", `head -c 100000 /dev/zero > "$OUT/big"`},
			outMax:     10000,
			wantOutErr: "/out is over the host's cap: it holds more than the 10000 bytes the VM may return, so none of it is returned",
			wantFiles:  map[string]string{},
		},
		{
			name:       "killed by signal",
			argv:       []string{"sh", "-c", "kill -9 $$"},
			outMax:     1 << 20,
			wantExit:   -1,
			wantSignal: "killed",
			wantFiles:  map[string]string{},
		},
		{
			name:      "missing program",
			argv:      []string{"/nonexistent/program"},
			outMax:    1 << 20,
			wantExit:  -1,
			wantErr:   "failed to run",
			wantFiles: map[string]string{},
		},
		{
			name:      "program missing from the command's PATH",
			argv:      []string{"no-such-program-bumper"},
			outMax:    1 << 20,
			wantExit:  -1,
			wantErr:   "not found in PATH",
			wantFiles: map[string]string{},
		},
		{
			name:       "large output is chunked",
			argv:       []string{"sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a"},
			outMax:     1 << 20,
			wantStdout: strings.Repeat("a", 200000),
			wantFiles:  map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "workspace")
			out := filepath.Join(root, "out")
			dev := filepath.Join(root, "out.disk")
			for _, d := range []string{ws, out} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(dev, make([]byte, 1<<21), 0o600); err != nil {
				t.Fatal(err)
			}
			sys := &fakeSystem{}
			r, w, done := serveAgent(t, Config{
				System: sys, WorkspaceDir: ws, OutDir: out, OutDevice: dev,
				BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "OUT=" + out},
			})
			clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			s := drive(t, r, w, &agentproto.Run{
				Argv: tt.argv, Env: tt.env, ClockUnixNano: clock.UnixNano(), MaxProcs: 64,
				Network: tt.network, Workspace: true, OutMaxBytes: tt.outMax, GrowRoot: tt.growRoot,
			})
			if err := <-done; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if s.result.ExitCode != tt.wantExit || s.result.Signal != tt.wantSignal {
				t.Errorf("result exit %d signal %q, want %d %q (error %q)", s.result.ExitCode, s.result.Signal, tt.wantExit, tt.wantSignal, s.result.Error)
			}
			if !strings.Contains(s.result.Error, tt.wantErr) || (tt.wantErr == "" && s.result.Error != "") {
				t.Errorf("result error %q, want %q", s.result.Error, tt.wantErr)
			}
			if !strings.Contains(s.result.OutError, tt.wantOutErr) || (tt.wantOutErr == "" && s.result.OutError != "") {
				t.Errorf("result out error %q, want %q", s.result.OutError, tt.wantOutErr)
			}
			if s.stdout.String() != tt.wantStdout || s.stderr.String() != tt.wantStderr {
				t.Errorf("stdout %.40q stderr %q, want %.40q %q", s.stdout.String(), s.stderr.String(), tt.wantStdout, tt.wantStderr)
			}
			if !sys.clock.Equal(clock) || sys.mounted != ws {
				t.Errorf("clock %v mounted %q, want %v %q", sys.clock, sys.mounted, clock, ws)
			}
			if sys.grown != tt.growRoot {
				t.Errorf("root grown = %v, want %v", sys.grown, tt.growRoot)
			}
			if (tt.network == nil) != (sys.network == nil) {
				t.Errorf("network configured = %v, want %v", sys.network, tt.network)
			}
			got := readTar(t, dev)
			if len(got) != len(tt.wantFiles) {
				t.Errorf("out files %v, want %v", got, tt.wantFiles)
			}
			for name, want := range tt.wantFiles {
				if got[name] != want {
					t.Errorf("out file %q = %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

func TestAgentRejectsBadRequests(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  string
	}{
		{"no command", `{"argv":[]}`, "no command"},
		{"env entry without a value", `{"argv":["true"],"env":["NOVALUE"],"max_procs":8,"out_max_bytes":4096}`, "KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dev := filepath.Join(root, "out.disk")
			if err := os.WriteFile(dev, make([]byte, 4096), 0o600); err != nil {
				t.Fatal(err)
			}
			sys := &fakeSystem{}
			r, w, _ := serveAgent(t, Config{System: sys, WorkspaceDir: root, OutDir: filepath.Join(root, "out"), OutDevice: dev, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
			if _, err := r.Read(); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(agentproto.TypeRun, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			f := readNonHello(t, r)
			var res agentproto.Result
			if err := agentproto.Decode(f.Payload, &res); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Error, tt.want) {
				t.Fatalf("result error %q, want %q", res.Error, tt.want)
			}
			if calls := sys.callLog(); len(calls) != 0 {
				t.Errorf("a refused request touched the system: %v", calls)
			}
			// A refused request is no run: the guest is still set up by the next one.
			s := runOne(t, r, w, &agentproto.Run{Argv: []string{"true"}, MaxProcs: 8, OutMaxBytes: 4096, Workspace: true})
			if s.result.ExitCode != 0 || s.result.Error != "" || sys.mounted != root {
				t.Errorf("run after a refused request: %+v, workspace mounted at %q; want it run and set up", s.result, sys.mounted)
			}
		})
	}
}

// TestAgentRunsInTurn plays a host that sends several commands to one agent: the guest
// is set up by the first only, the clock is set and the agent user's processes killed
// for each, and /out is written after each, a later and shorter archive read alone.
func TestAgentRunsInTurn(t *testing.T) {
	kill := fmt.Sprintf("kill %d", os.Getuid())
	type run struct {
		script     string
		wantStdout string
		wantErr    string
		wantOut    map[string]string // nil: the out disk is not checked
		// wantLeft and wantKillErr are what the result says the command left running.
		wantLeft    int
		wantKillErr string
	}
	tests := []struct {
		name      string
		sys       *fakeSystem
		runs      []run
		wantCalls []string
	}{
		{
			name: "set up once, leftovers killed and /out written after each",
			sys:  &fakeSystem{},
			runs: []run{
				{script: `echo one > made; head -c 5000 /dev/zero > "$OUT/big"; echo a > "$OUT/a"; echo first`,
					wantStdout: "first\n", wantOut: map[string]string{"a": "a\n", "big": strings.Repeat("\x00", 5000)}},
				{script: `cat made; rm "$OUT/big" "$OUT/a"; echo b > "$OUT/b"`,
					wantStdout: "one\n", wantOut: map[string]string{"b": "b\n"}},
				{script: `rm "$OUT/b"; echo third`, wantStdout: "third\n", wantOut: map[string]string{}},
			},
			wantCalls: []string{"clock", "grow", "network", "mount", kill, "clock", kill, "clock", kill},
		},
		{
			name: "a failed setup runs nothing, then or later",
			sys:  &fakeSystem{mountErr: errors.New("no such disk")},
			runs: []run{
				{script: `echo ran >> "$OUT/../ran"`, wantErr: "failed to mount workspace: no such disk"},
				{script: `echo ran >> "$OUT/../ran"`, wantErr: "failed to mount workspace: no such disk"},
			},
			wantCalls: []string{"clock", "grow", "network", "mount", "clock"},
		},
		{
			name: "leftovers are counted",
			sys:  &fakeSystem{left: 64},
			runs: []run{
				{script: `echo ran`, wantStdout: "ran\n", wantLeft: 64},
				{script: `echo again`, wantStdout: "again\n", wantLeft: 64},
			},
			wantCalls: []string{"clock", "grow", "network", "mount", kill, "clock", kill},
		},
		{
			// The host learns it from the command that left them, not only from the
			// next one, which the agent refuses.
			name: "leftovers that survive stop the next command",
			sys:  &fakeSystem{left: 64, killErr: errors.New("1 process still alive")},
			runs: []run{
				{script: `echo ran`, wantStdout: "ran\n", wantOut: map[string]string{}, wantLeft: 64, wantKillErr: "1 process still alive"},
				{script: `echo ran`, wantErr: "processes of an earlier command could not be ended: 1 process still alive"},
			},
			wantCalls: []string{"clock", "grow", "network", "mount", kill},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			ws, out, dev := filepath.Join(root, "workspace"), filepath.Join(root, "out"), filepath.Join(root, "out.disk")
			for _, d := range []string{ws, out} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(dev, make([]byte, 1<<20), 0o600); err != nil {
				t.Fatal(err)
			}
			r, w, done := serveAgent(t, Config{System: tt.sys, WorkspaceDir: ws, OutDir: out, OutDevice: dev,
				BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "OUT=" + out}})
			if f, err := r.Read(); err != nil || f.Type != agentproto.TypeHello {
				t.Fatalf("first frame = %v %v, want hello", f.Type, err)
			}
			for i, rn := range tt.runs {
				clock := time.Date(2030, 1, 2, 3, 4, i, 0, time.UTC)
				s := runOne(t, r, w, &agentproto.Run{
					Argv: []string{"sh", "-c", rn.script}, ClockUnixNano: clock.UnixNano(), MaxProcs: 64, OutMaxBytes: 1 << 19,
					Network: &agentproto.Network{Address: "10.0.2.15/24", Gateway: "10.0.2.2"}, Workspace: true, GrowRoot: true,
				})
				if s.stdout.String() != rn.wantStdout || !strings.Contains(s.result.Error, rn.wantErr) || (rn.wantErr == "" && s.result.Error != "") {
					t.Errorf("run %d: stdout %q error %q (stderr %q), want %q %q", i+1, s.stdout.String(), s.result.Error, s.stderr.String(), rn.wantStdout, rn.wantErr)
				}
				if rn.wantErr == "" && (s.result.Leftover != rn.wantLeft || s.result.KillError != rn.wantKillErr) {
					t.Errorf("run %d: leftover %d (%q), want %d (%q)", i+1, s.result.Leftover, s.result.KillError, rn.wantLeft, rn.wantKillErr)
				}
				if rn.wantErr == "" && !tt.sys.clock.Equal(clock) {
					t.Errorf("run %d: clock %v, want %v", i+1, tt.sys.clock, clock)
				}
				if rn.wantOut == nil {
					continue
				}
				if got := readTar(t, dev); !maps.Equal(got, rn.wantOut) {
					t.Errorf("run %d: out disk holds %q, want %q", i+1, got, rn.wantOut)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "ran")); tt.sys.mountErr != nil && err == nil {
				t.Error("a command ran on a guest whose setup failed")
			}
			if got := tt.sys.callLog(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("system calls %v, want %v", got, tt.wantCalls)
			}
			if err := w.Write(agentproto.TypeShutdown, nil); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("Serve: %v", err)
			}
		})
	}
}

// serveAgent serves an agent for cfg over a pipe (cfg.Conn is its end) and returns the
// host's reader and writer and where Serve's result arrives.
func serveAgent(t *testing.T, cfg Config) (*agentproto.Reader, *agentproto.Writer, <-chan error) {
	t.Helper()
	host, guestEnd := net.Pipe()
	t.Cleanup(func() { host.Close() })
	cfg.Conn = guestEnd
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background()) }()
	return agentproto.NewReader(host, agentproto.GuestTypes...), agentproto.NewWriter(host), done
}

// trueRun is a minimal valid run request.
const trueRun = `{"argv":["true"],"max_procs":8,"out_max_bytes":4096}`

// runTrue sends trueRun and checks that a result comes back.
func runTrue(t *testing.T, w *agentproto.Writer, r *agentproto.Reader) {
	t.Helper()
	if err := w.Write(agentproto.TypeRun, []byte(trueRun)); err != nil {
		t.Fatal(err)
	}
	if f := readNonHello(t, r); f.Type != agentproto.TypeResult {
		t.Fatalf("after a run got %v, want a result", f.Type)
	}
}

// readNonHello returns the next frame that is not a repeated hello.
func readNonHello(t *testing.T, r *agentproto.Reader) agentproto.Frame {
	t.Helper()
	for {
		f, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type != agentproto.TypeHello {
			return f
		}
	}
}

// TestAgentPrepare checks the snapshot preparation: caches dropped, each warm-up command
// run once (a failing one does not stop the rest), a hello in answer, and the agent
// still idle and able to run a command afterwards. Preparing after a run is refused.
func TestAgentPrepare(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "out.disk")
	if err := os.WriteFile(dev, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(root, "warm.log")
	sys := &fakeSystem{}
	r, w, done := serveAgent(t, Config{System: sys, WorkspaceDir: root, OutDir: filepath.Join(root, "out"), OutDevice: dev,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "MARK=" + mark}})
	if f, err := r.Read(); err != nil || f.Type != agentproto.TypeHello {
		t.Fatalf("first frame = %v %v, want hello", f.Type, err)
	}
	prep, err := agentproto.Encode(agentproto.Prepare{WarmUp: [][]string{
		{"sh", "-c", `echo one >> "$MARK"`},
		{"no-such-warm-up-command"},
		{"sh", "-c", `pwd >> "$MARK"`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(agentproto.TypePrepare, prep); err != nil {
		t.Fatal(err)
	}
	if f := readNonHello(t, r); f.Type != agentproto.TypePrepared {
		t.Fatalf("answer to prepare = %v, want prepared", f.Type)
	}
	got, err := os.ReadFile(mark)
	if err != nil || string(got) != "one\n/\n" {
		t.Errorf("warm-up commands wrote %q (%v), want both to have run once, in /", got, err)
	}
	if sys.dropped != 1 {
		t.Errorf("caches dropped %d times, want 1", sys.dropped)
	}
	runTrue(t, w, r)
	if err := w.Write(agentproto.TypePrepare, prep); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "after a run") {
		t.Fatalf("Serve after a prepare following a run = %v, want a refusal", err)
	}
}
