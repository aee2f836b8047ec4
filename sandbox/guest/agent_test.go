package guest

import (
	"archive/tar"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
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
}

func (f *fakeSystem) SetClock(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = t
	return nil
}

func (f *fakeSystem) ConfigureNetwork(n agentproto.Network) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.network = &n
	return nil
}

func (f *fakeSystem) MountWorkspace(dir string, _, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted = dir
	return nil
}

func (f *fakeSystem) KillUser(int) error { return nil }

func (f *fakeSystem) DropCaches() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped++
	return nil
}

func (f *fakeSystem) GrowRoot() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grown = true
	return nil
}

type session struct {
	stdout, stderr strings.Builder
	result         agentproto.Result
}

// drive plays the host: it reads hello, sends req, collects frames until the result,
// then sends shutdown.
func drive(t *testing.T, r *agentproto.Reader, w *agentproto.Writer, req *agentproto.Run) *session {
	t.Helper()
	s := &session{}
	f, err := r.Read()
	if err != nil || f.Type != agentproto.TypeHello {
		t.Fatalf("first frame = %v %v, want hello", f.Type, err)
	}
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
			if err := w.Write(agentproto.TypeShutdown, nil); err != nil {
				t.Fatal(err)
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
			wantOutErr: "exceeds",
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
		frame func(w *agentproto.Writer) error
		want  string
	}{
		{"invalid run", func(w *agentproto.Writer) error {
			return w.Write(agentproto.TypeRun, []byte(`{"argv":[]}`))
		}, "no command"},
		{"second run", nil, "second run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dev := filepath.Join(root, "out.disk")
			if err := os.WriteFile(dev, make([]byte, 4096), 0o600); err != nil {
				t.Fatal(err)
			}
			r, w, done := serveAgent(t, Config{System: &fakeSystem{}, WorkspaceDir: root, OutDir: filepath.Join(root, "out"), OutDevice: dev, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
			if _, err := r.Read(); err != nil {
				t.Fatal(err)
			}
			if tt.frame != nil {
				if err := tt.frame(w); err != nil {
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
				return
			}
			runTrue(t, w, r)
			if err := w.Write(agentproto.TypeRun, []byte(trueRun)); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Serve = %v, want error containing %q", err, tt.want)
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
