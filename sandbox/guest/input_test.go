package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// host plays the host's side of the channel: it reads the agent's frames on a
// goroutine of its own, as the real host does while it writes input.
type host struct {
	t      *testing.T
	w      *agentproto.Writer
	frames chan agentproto.Frame
	done   <-chan error
}

// newInputAgent serves an agent whose commands get their steering directory at
// root/steer, and returns the host after the agent's hello.
func newInputAgent(t *testing.T, root string) (*host, string) {
	t.Helper()
	dev := filepath.Join(root, "out.disk")
	if err := os.WriteFile(dev, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	steer := filepath.Join(root, "steer")
	r, w, done := serveAgent(t, Config{System: &fakeSystem{}, WorkspaceDir: root, OutDir: filepath.Join(root, "out"), OutDevice: dev,
		SteerDir: steer, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
	h := &host{t: t, w: w, frames: make(chan agentproto.Frame, 1024), done: done}
	go func() {
		defer close(h.frames)
		for {
			f, err := r.Read()
			if err != nil {
				return
			}
			if f.Type != agentproto.TypeHello {
				h.frames <- f
			}
		}
	}()
	return h, steer
}

func (h *host) send(typ agentproto.Type, payload []byte) {
	h.t.Helper()
	if err := h.w.Write(typ, payload); err != nil {
		h.t.Fatalf("sending %s: %v", typ, err)
	}
}

// run sends a run request for script with the input asked for.
func (h *host) run(script string, stdin, steering bool) {
	h.t.Helper()
	payload, err := agentproto.Encode(agentproto.Run{Argv: []string{"sh", "-c", script}, MaxProcs: 64, OutMaxBytes: 1 << 19,
		Stdin: stdin, Steering: steering})
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(agentproto.TypeRun, payload)
}

// steer sends a file for the steering directory as the host encodes it.
func (h *host) steer(name, data string) {
	h.t.Helper()
	payload, err := json.Marshal(agentproto.SteerFile{Name: name, Data: []byte(data)})
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(agentproto.TypeSteer, payload)
}

// next is the agent's next frame that is not output; output goes to out.
func (h *host) next(out *strings.Builder) agentproto.Frame {
	h.t.Helper()
	for f := range h.frames {
		switch f.Type {
		case agentproto.TypeStdout, agentproto.TypeStderr:
			out.Write(f.Payload)
		default:
			return f
		}
	}
	h.t.Fatal("the agent's channel closed")
	return agentproto.Frame{}
}

// ack reads the next frame, which must answer a steer.
func (h *host) ack(out *strings.Builder) agentproto.SteerAck {
	h.t.Helper()
	f := h.next(out)
	if f.Type != agentproto.TypeSteered {
		h.t.Fatalf("got %s, want the answer to a steer", f.Type)
	}
	var a agentproto.SteerAck
	if err := agentproto.Decode(f.Payload, &a); err != nil {
		h.t.Fatalf("the agent's answer does not decode: %v", err)
	}
	return a
}

// rawAck reads the next frame, which must answer a steer, without checking it as the
// real host does (which refuses an answer that names no file it sent).
func (h *host) rawAck(out *strings.Builder) agentproto.SteerAck {
	h.t.Helper()
	f := h.next(out)
	if f.Type != agentproto.TypeSteered {
		h.t.Fatalf("got %s, want the answer to a steer", f.Type)
	}
	var a agentproto.SteerAck
	if err := json.Unmarshal(f.Payload, &a); err != nil {
		h.t.Fatalf("the agent's answer is not JSON: %v", err)
	}
	return a
}

// result reads frames up to the command's result.
func (h *host) result(out *strings.Builder) agentproto.Result {
	h.t.Helper()
	f := h.next(out)
	if f.Type != agentproto.TypeResult {
		h.t.Fatalf("got %s, want a result", f.Type)
	}
	var res agentproto.Result
	if err := agentproto.Decode(f.Payload, &res); err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *host) shutdown() {
	h.t.Helper()
	h.send(agentproto.TypeShutdown, nil)
	if err := <-h.done; err != nil {
		h.t.Fatalf("Serve: %v", err)
	}
}

// waitFor is a script line that waits for a file to exist.
func waitFor(path string) string {
	return fmt.Sprintf(`while [ ! -e "%s" ]; do sleep 0.01; done; `, path)
}

// TestAgentStdin: what the host sends while a command runs reaches its standard input,
// in order and across frames, and closing it ends the command's input; a command that
// did not ask for it reads nothing, and what is sent to it is dropped.
func TestAgentStdin(t *testing.T) {
	t.Run("fed and closed", func(t *testing.T) {
		h, _ := newInputAgent(t, t.TempDir())
		h.run(`cat; echo END`, true, false)
		big := strings.Repeat("b", 3*agentproto.MaxChunk)
		for _, p := range []string{"hello\n", big, "\nworld\n"} {
			for len(p) > 0 {
				n := min(len(p), agentproto.MaxChunk)
				h.send(agentproto.TypeStdin, []byte(p[:n]))
				p = p[n:]
			}
		}
		h.send(agentproto.TypeStdinClose, nil)
		var out strings.Builder
		res := h.result(&out)
		if res.ExitCode != 0 || out.String() != "hello\n"+big+"\nworld\nEND\n" {
			t.Fatalf("result %+v, output %.60q… (%d bytes)", res, out.String(), out.Len())
		}
		h.shutdown()
	})
	t.Run("a command without standard input", func(t *testing.T) {
		h, _ := newInputAgent(t, t.TempDir())
		h.run(`cat; echo "read $(wc -c < /dev/stdin) more"; echo END`, false, false)
		h.send(agentproto.TypeStdin, []byte("not for you\n"))
		h.send(agentproto.TypeStdinClose, nil)
		var out strings.Builder
		if res := h.result(&out); res.ExitCode != 0 || out.String() != "read 0 more\nEND\n" {
			t.Fatalf("result %+v, output %q", res, out.String())
		}
		h.shutdown()
	})
	t.Run("a command that never reads it still ends", func(t *testing.T) {
		h, _ := newInputAgent(t, t.TempDir())
		h.run(`sleep 0.2; echo done`, true, false)
		for range stdinQueue + 8 {
			h.send(agentproto.TypeStdin, make([]byte, agentproto.MaxChunk))
		}
		var out strings.Builder
		if res := h.result(&out); res.ExitCode != 0 || out.String() != "done\n" {
			t.Fatalf("result %+v, output %q", res, out.String())
		}
		h.shutdown()
	})
}

// TestAgentSteering: a command that takes steers gets an empty directory of its own,
// named in its environment, that the agent fills with each file the host sends, whole,
// and answers for each; the directory is gone when the command ends and made afresh
// for the next.
func TestAgentSteering(t *testing.T) {
	root := t.TempDir()
	h, dir := newInputAgent(t, root)
	h.run(waitFor(`$BUMPER_STEER_DIR/002-b.md`)+`echo "dir $BUMPER_STEER_DIR"; stat -c '%a %u' "$BUMPER_STEER_DIR" "$BUMPER_STEER_DIR"/*; ls -a "$BUMPER_STEER_DIR"; cat "$BUMPER_STEER_DIR"/*`, false, true)
	var out strings.Builder
	h.steer("001-a.md", "first\n")
	if a := h.ack(&out); a != (agentproto.SteerAck{Name: "001-a.md"}) {
		t.Fatalf("answer %+v", a)
	}
	h.steer("002-b.md", "second\n")
	if a := h.ack(&out); a != (agentproto.SteerAck{Name: "002-b.md"}) {
		t.Fatalf("answer %+v", a)
	}
	res := h.result(&out)
	uid := os.Getuid()
	want := fmt.Sprintf("dir %s\n755 %d\n644 %d\n644 %d\n.\n..\n001-a.md\n002-b.md\nfirst\nsecond\n", dir, uid, uid, uid)
	if res.ExitCode != 0 || out.String() != want {
		t.Fatalf("result %+v, output\n%s\nwant\n%s", res, out.String(), want)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the steering directory outlived its command: %v", err)
	}
	// The next command's directory is its own: empty.
	out.Reset()
	h.run(`ls -A "$BUMPER_STEER_DIR" | wc -l`, false, true)
	if res := h.result(&out); res.ExitCode != 0 || strings.TrimSpace(out.String()) != "0" {
		t.Fatalf("the next command's directory: %+v %q", res, out.String())
	}
	// A command that takes no steers has no directory, and a file for it is refused.
	out.Reset()
	h.run(waitFor(filepath.Join(root, "go"))+`echo "dir [$BUMPER_STEER_DIR]"`, false, false)
	h.steer("001-a.md", "x")
	if a := h.ack(&out); a.Name != "001-a.md" || !strings.Contains(a.Error, "no steering directory") {
		t.Fatalf("answer %+v", a)
	}
	if err := os.WriteFile(filepath.Join(root, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := h.result(&out); res.ExitCode != 0 || out.String() != "dir []\n" {
		t.Fatalf("a command without steering: %+v %q", res, out.String())
	}
	h.shutdown()
}

// TestAgentSteeringRefusals plays a host whose steer frames are wrong, as a bug or a
// forged frame would make them: names that are paths, hidden or the agent's temporary
// names, a file placed twice, too large, too many. Each is answered with why, places
// nothing, and the command runs on; nothing is written outside the directory.
func TestAgentSteeringRefusals(t *testing.T) {
	root := t.TempDir()
	h, _ := newInputAgent(t, root)
	h.run(waitFor(filepath.Join(root, "go"))+`ls -A "$BUMPER_STEER_DIR"`, false, true)
	var out strings.Builder
	for _, tt := range []struct{ payload, want string }{
		{`{"name":"../escaped","data":"eA=="}`, "must be letters"},
		{`{"name":"/tmp/escaped","data":"eA=="}`, "must be letters"},
		{`{"name":".tmp-ok.md","data":"eA=="}`, "must be letters"},
		{`{"name":"..","data":""}`, "must be letters"},
		{`{"name":"a","data":"eA==","mode":"4755"}`, "unknown field"},
		{`not json`, "failed to decode"},
	} {
		h.send(agentproto.TypeSteer, []byte(tt.payload))
		if a := h.rawAck(&out); !strings.Contains(a.Error, tt.want) || agentproto.CheckSteerName(a.Name) != nil && a.Name != "" {
			t.Errorf("%s: answer %+v, want %q", tt.payload, a, tt.want)
		}
	}
	h.steer("ok.md", "once")
	if a := h.rawAck(&out); a.Error != "" {
		t.Fatalf("a good file refused: %+v", a)
	}
	h.steer("ok.md", "twice")
	if a := h.rawAck(&out); !strings.Contains(a.Error, "placed already") {
		t.Errorf("a file placed twice: %+v", a)
	}
	big, _ := json.Marshal(agentproto.SteerFile{Name: "big", Data: make([]byte, agentproto.MaxSteerFile+1)})
	h.send(agentproto.TypeSteer, big)
	if a := h.rawAck(&out); !strings.Contains(a.Error, "more than the") {
		t.Errorf("a file too large: %+v", a)
	}
	for i := 1; i < agentproto.MaxSteerFiles; i++ {
		h.steer(fmt.Sprintf("f%03d", i), "")
		if a := h.rawAck(&out); a.Error != "" {
			t.Fatalf("file %d refused: %+v", i, a)
		}
	}
	h.steer("one-too-many", "")
	if a := h.rawAck(&out); !strings.Contains(a.Error, "the most one command may have") {
		t.Errorf("a file past the bound: %+v", a)
	}
	if err := os.WriteFile(filepath.Join(root, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := h.result(&out)
	names := strings.Fields(out.String())
	if res.ExitCode != 0 || len(names) != agentproto.MaxSteerFiles || names[len(names)-1] != "ok.md" {
		t.Fatalf("result %+v; the directory held %d files (%v…)", res, len(names), names[:min(3, len(names))])
	}
	for _, p := range []string{filepath.Join(root, "escaped"), "/tmp/escaped"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("a file was written outside the steering directory: %s", p)
		}
	}
	h.shutdown()
}

// TestAgentSteerDirLink: what stands at the steering directory's path before a command
// (a link to elsewhere) is replaced, never written through.
func TestAgentSteerDirLink(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "kept"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, dir := newInputAgent(t, root)
	if err := os.Symlink(victim, dir); err != nil {
		t.Fatal(err)
	}
	h.run(waitFor(`$BUMPER_STEER_DIR/a`)+`cat "$BUMPER_STEER_DIR/a"`, false, true)
	var out strings.Builder
	h.steer("a", "placed")
	if a := h.ack(&out); a.Error != "" {
		t.Fatalf("answer %+v", a)
	}
	if res := h.result(&out); res.ExitCode != 0 || out.String() != "placed" {
		t.Fatalf("result %+v %q", res, out.String())
	}
	entries, err := os.ReadDir(victim)
	if err != nil || len(entries) != 1 || entries[0].Name() != "kept" {
		t.Fatalf("the link's target changed: %v %v", entries, err)
	}
	h.shutdown()
}

// TestAgentInputAfterTheCommand: input the host sent before it read a command's result
// reaches nothing and answers nothing; the next command runs as if it had not been sent.
func TestAgentInputAfterTheCommand(t *testing.T) {
	h, _ := newInputAgent(t, t.TempDir())
	var out strings.Builder
	h.run(`echo first`, true, true)
	if res := h.result(&out); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	h.send(agentproto.TypeStdin, []byte("late\n"))
	h.steer("late.md", "late")
	h.send(agentproto.TypeStdinClose, nil)
	out.Reset()
	h.run(`cat; ls -A "$BUMPER_STEER_DIR"; echo second`, true, true)
	h.send(agentproto.TypeStdinClose, nil)
	// The next frame is the second command's result: no answer for the late file.
	if res := h.result(&out); res.ExitCode != 0 || out.String() != "second\n" {
		t.Fatalf("result %+v, output %q", res, out.String())
	}
	h.shutdown()
}

// TestAgentRefusesARequestWhileACommandRuns: the channel carries one command at a time;
// a host that asks for another (or for a snapshot, or a shutdown) while one runs is
// broken, and the agent ends the command and serves no more.
func TestAgentRefusesARequestWhileACommandRuns(t *testing.T) {
	for _, typ := range []agentproto.Type{agentproto.TypeRun, agentproto.TypePrepare, agentproto.TypeShutdown} {
		t.Run(typ.String(), func(t *testing.T) {
			h, _ := newInputAgent(t, t.TempDir())
			h.run(`echo $$; exec sleep 600`, false, false)
			var out strings.Builder
			for !strings.HasSuffix(out.String(), "\n") {
				switch f := <-h.frames; f.Type {
				case agentproto.TypeStdout:
					out.Write(f.Payload)
				case agentproto.TypeResult:
					t.Fatalf("the command ended before the request: %s", f.Payload)
				}
			}
			h.send(typ, []byte(trueRun))
			err := <-h.done
			if err == nil || !strings.Contains(err.Error(), "while a command ran") {
				t.Fatalf("Serve = %v, want a refusal", err)
			}
			// Serve returned after the command was reaped: its process is gone.
			if _, err := os.Stat("/proc/" + strings.TrimSpace(out.String())); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the command %s still runs: %v", strings.TrimSpace(out.String()), err)
			}
		})
	}
}
