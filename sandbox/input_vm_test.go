package sandbox

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// outputWatch collects a command's output and lets a test wait until it holds a text.
type outputWatch struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newOutputWatch() *outputWatch { return &outputWatch{changed: make(chan struct{}, 1)} }

func (w *outputWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *outputWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor returns once the output holds s, or fails when the command ended first.
func (w *outputWatch) waitFor(t *testing.T, s string, ended <-chan struct{}) {
	t.Helper()
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.changed:
		case <-ended:
			if !strings.Contains(w.String(), s) {
				t.Fatalf("the command ended without printing %q: %q", s, w.String())
			}
		}
	}
}

// inputScript is the command of TestSessionInput, run as the agent user: it reads a
// line of its standard input and a steering file, tries to change the steering
// directory, says it is ready, then reads another line and file and waits for the end
// of its input.
const inputScript = `d="$BUMPER_STEER_DIR"
echo "dir $d $(stat -c '%U %a' "$d")"
read -r line; echo "stdin: $line"
while [ ! -e "$d/001-a.md" ]; do sleep 0.05; done
echo "a: $(cat "$d/001-a.md") $(stat -c '%U %a' "$d/001-a.md")"
touch "$d/mine" 2>/dev/null && echo "wrote a file" || echo "cannot write"
rm -f "$d/001-a.md" 2>/dev/null; [ -e "$d/001-a.md" ] && echo "cannot remove"
mv "$d/001-a.md" "$d/x" 2>/dev/null || echo "cannot rename"
chmod 777 "$d" 2>/dev/null || echo "cannot chmod"
echo ready
read -r line; echo "stdin: $line"
while [ ! -e "$d/002-b.md" ]; do sleep 0.05; done
echo "b: $(cat "$d/002-b.md")"
ls -a "$d" | tr '\n' ' '; echo
read -r rest || echo "end of input"
`

// TestSessionInput: in a real VM, a command run as the agent user reads what the host
// writes to its standard input and the files the host places in its steering
// directory while it runs, whole; it can neither add, remove, rename nor open up
// anything there; each file's placement is reported; the next command's directory is
// empty and its input its own. Cold and from a snapshot (the input then waits in the
// channel while QEMU loads the state).
func TestSessionInput(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(t *testing.T) {
			ctx := testContext(t)
			cfg := testImageConfig(t, im)
			if warm {
				cfg.SnapshotDir = filepath.Join(t.TempDir(), "snapshots")
				cfg.WorkspaceDiskMB = 512
			}
			s, err := Open(ctx, SessionSpec{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			if err := s.Start(ctx, t.TempDir()); err != nil {
				t.Fatalf("Start: %v", err)
			}
			log := &placedLog{}
			in := NewInput(InputConfig{Stdin: true, Steering: true, Placed: log.placed})
			// Sent before the command runs: it waits in order.
			if _, err := in.Write([]byte("first line\n")); err != nil {
				t.Fatal(err)
			}
			if err := in.Place("001-a.md", []byte("steer A")); err != nil {
				t.Fatal(err)
			}
			out := newOutputWatch()
			ended := make(chan struct{})
			var res *Result
			var runErr error
			go func() {
				defer close(ended)
				res, runErr = s.Run(ctx, []string{"sh", "-c", inputScript}, nil, out, out, in)
			}()
			out.waitFor(t, "ready\n", ended)
			if _, err := in.Write([]byte("second line\n")); err != nil {
				t.Fatal(err)
			}
			if err := in.Place("002-b.md", []byte("steer B")); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "b: steer B", ended)
			if err := in.CloseStdin(); err != nil {
				t.Fatal(err)
			}
			<-ended
			if runErr != nil || res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v; output %q", res, runErr, out.String())
			}
			want := "dir /run/bumper-steer root 755\nstdin: first line\na: steer A root 644\ncannot write\ncannot remove\ncannot rename\ncannot chmod\nready\n" +
				"stdin: second line\nb: steer B\n. .. 001-a.md 002-b.md \nend of input\n"
			if out.String() != want {
				t.Fatalf("output\n%s\nwant\n%s", out.String(), want)
			}
			if got := log.log(); strings.Join(got, "|") != "001-a.md: placed|002-b.md: placed" {
				t.Fatalf("Placed was told %q", got)
			}
			// The next command: its own directory, empty; no standard input of the last.
			var next strings.Builder
			res, err = s.Run(ctx, []string{"sh", "-c", `ls -A "$BUMPER_STEER_DIR" | wc -l; cat; echo "[$BUMPER_STEER_DIR]"`}, nil, &next, &next,
				NewInput(InputConfig{Steering: true}))
			if err != nil || res.ExitCode != 0 || next.String() != "0\n[/run/bumper-steer]\n" {
				t.Fatalf("the next command: %+v, %v, %q", res, err, next.String())
			}
			next.Reset()
			res, err = s.Run(ctx, []string{"sh", "-c", `ls -d /run/bumper-steer 2>&1; echo "[$BUMPER_STEER_DIR]"`}, nil, &next, &next)
			if err != nil || res.ExitCode != 0 || !strings.Contains(next.String(), "No such file") || !strings.HasSuffix(next.String(), "[]\n") {
				t.Fatalf("a command without input: %+v, %v, %q", res, err, next.String())
			}
			t.Logf("boot %s", s.Report().Boot.Mode)
		})
	}
}
