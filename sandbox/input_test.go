package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// fakeGuest is the guest's end of a Machine's agent channel, scripted by a test: the
// host's side of the protocol, without QEMU.
type fakeGuest struct {
	r *agentproto.Reader
	w *agentproto.Writer
	// host is the host's end of the pipe: closing it is the VM going away.
	host net.Conn
}

// pipeMachine is a started Machine whose agent channel is a pipe to a fakeGuest.
func pipeMachine(t *testing.T) (*Machine, *fakeGuest) {
	t.Helper()
	hostEnd, guestEnd := net.Pipe()
	t.Cleanup(func() { hostEnd.Close(); guestEnd.Close() })
	m := &Machine{cfg: Config{}.withDefaults(), log: zerolog.Nop(), exited: make(chan struct{}), done: make(chan struct{}), helloSeen: true}
	m.r, m.w = agentproto.NewReader(hostEnd, agentproto.GuestTypes...), agentproto.NewWriter(hostEnd)
	return m, &fakeGuest{r: agentproto.NewReader(guestEnd, agentproto.HostTypes...), w: agentproto.NewWriter(guestEnd), host: hostEnd}
}

// request reads the host's run request.
func (g *fakeGuest) request(t *testing.T) agentproto.Run {
	t.Helper()
	f, err := g.r.Read()
	if err != nil || f.Type != agentproto.TypeRun {
		t.Errorf("the guest got %v %v, want a run request", f.Type, err)
		return agentproto.Run{}
	}
	var req agentproto.Run
	if err := agentproto.Decode(f.Payload, &req); err != nil {
		t.Error(err)
	}
	return req
}

func (g *fakeGuest) send(typ agentproto.Type, v any) {
	var payload []byte
	switch p := v.(type) {
	case nil:
	case string:
		payload = []byte(p)
	default:
		payload, _ = agentproto.Encode(v)
	}
	_ = g.w.Write(typ, payload)
}

// placedLog records what an Input's Placed callback was told.
type placedLog struct {
	mu    sync.Mutex
	calls []string
}

func (p *placedLog) placed(name string, at time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil:
		p.calls = append(p.calls, name+": "+err.Error())
	case at.IsZero():
		p.calls = append(p.calls, name+": placed at no time")
	default:
		p.calls = append(p.calls, name+": placed")
	}
}

func (p *placedLog) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// TestRunInput: what the host writes and places before and while a command runs goes
// to the guest after the run request, in order; each placed file is told once, when
// the guest answers or when the command ends first; afterwards the Input refuses.
func TestRunInput(t *testing.T) {
	m, g := pipeMachine(t)
	log := &placedLog{}
	in := NewInput(InputConfig{Stdin: true, Steering: true, Placed: log.placed})
	// Before the command starts: it waits.
	if _, err := in.Write([]byte("before\n")); err != nil {
		t.Fatal(err)
	}
	if err := in.Place("001-a.md", []byte("steer a")); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2*agentproto.MaxChunk+5)
	guestDone := make(chan []string)
	go func() {
		var got []string
		req := g.request(t)
		got = append(got, fmt.Sprintf("run stdin=%v steering=%v", req.Stdin, req.Steering))
		stdin := ""
		for {
			f, err := g.r.Read()
			if err != nil {
				t.Error(err)
				break
			}
			if f.Type == agentproto.TypeStdin {
				stdin += string(f.Payload)
				if len(f.Payload) > agentproto.MaxChunk {
					t.Errorf("a stdin frame of %d bytes", len(f.Payload))
				}
				continue
			}
			if stdin != "" {
				got = append(got, fmt.Sprintf("stdin %d bytes", len(stdin)))
				stdin = ""
			}
			got = append(got, f.Type.String())
			if f.Type == agentproto.TypeSteer {
				var file agentproto.SteerFile
				if err := agentproto.Decode(f.Payload, &file); err != nil {
					t.Error(err)
				}
				got = append(got, file.Name+"="+string(file.Data))
				if file.Name == "001-a.md" {
					g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: file.Name})
					// While it runs: more input.
					go func() {
						_, _ = in.Write([]byte(big))
						_ = in.Place("002-b.md", []byte("steer b"))
						_ = in.Place("003-c.md", []byte("steer c"))
						_ = in.CloseStdin()
					}()
				}
				if file.Name == "002-b.md" {
					g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: file.Name, Error: "no space left"})
				}
			}
			if f.Type == agentproto.TypeStdinClose {
				break
			}
		}
		g.send(agentproto.TypeStdout, "out")
		g.send(agentproto.TypeResult, agentproto.Result{ExitCode: 0})
		guestDone <- got
	}()
	var out strings.Builder
	res, err := m.Run(context.Background(), []string{"agent"}, nil, &out, nil, in)
	if err != nil || res.ExitCode != 0 || out.String() != "out" {
		t.Fatalf("Run = %+v, %v (output %q)", res, err, out.String())
	}
	want := []string{"run stdin=true steering=true", "stdin 7 bytes", "steer", "001-a.md=steer a",
		fmt.Sprintf("stdin %d bytes", len(big)), "steer", "002-b.md=steer b", "steer", "003-c.md=steer c", "stdin-close"}
	if got := <-guestDone; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the guest got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantPlaced := []string{"001-a.md: placed", "002-b.md: the guest did not place steering file 002-b.md: no space left", "003-c.md: " + ErrInputEnded.Error()}
	if got := log.log(); strings.Join(got, "\n") != strings.Join(wantPlaced, "\n") {
		t.Fatalf("Placed was told\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantPlaced, "\n"))
	}
	if _, err := in.Write([]byte("late")); !errors.Is(err, ErrInputEnded) {
		t.Errorf("Write after the command = %v", err)
	}
	if err := in.Place("004-d.md", nil); !errors.Is(err, ErrInputEnded) {
		t.Errorf("Place after the command = %v", err)
	}
	if _, err := m.Run(context.Background(), []string{"again"}, nil, nil, nil, in); err == nil {
		t.Error("an Input served a second command")
	}
}

// TestInputRefusals: what an Input refuses before anything is sent.
func TestInputRefusals(t *testing.T) {
	none := NewInput(InputConfig{})
	if _, err := none.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "reads none") {
		t.Errorf("Write without Stdin = %v", err)
	}
	if err := none.Place("a", nil); err == nil || !strings.Contains(err.Error(), "no steering directory") {
		t.Errorf("Place without Steering = %v", err)
	}
	in := NewInput(InputConfig{Stdin: true, Steering: true})
	for _, name := range []string{"../a", "/etc/passwd", ".tmp-a", "", "a/b", strings.Repeat("n", 101)} {
		if err := in.Place(name, nil); err == nil {
			t.Errorf("Place(%q) accepted", name)
		}
	}
	if err := in.Place("big", make([]byte, agentproto.MaxSteerFile+1)); err == nil {
		t.Error("a file past the bound accepted")
	}
	if err := in.Place("a", nil); err != nil {
		t.Fatal(err)
	}
	if err := in.Place("a", nil); err == nil || !strings.Contains(err.Error(), "placed already") {
		t.Errorf("a name twice = %v", err)
	}
	for i := 1; i < agentproto.MaxSteerFiles; i++ {
		if err := in.Place(fmt.Sprint("f", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Place("one-more", nil); err == nil || !strings.Contains(err.Error(), "the most it may have") {
		t.Errorf("a file past the count = %v", err)
	}
	if _, err := in.Write(make([]byte, MaxInputQueued+1)); err == nil || !strings.Contains(err.Error(), "does not take them") {
		t.Errorf("a queue past its bound = %v", err)
	}
	if err := in.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Write after CloseStdin = %v", err)
	}
	m, _ := pipeMachine(t)
	if _, err := m.Run(context.Background(), []string{"x"}, nil, nil, nil, in, NewInput(InputConfig{})); err == nil || !strings.Contains(err.Error(), "one Input") {
		t.Errorf("Run with two inputs = %v", err)
	}
}

// TestHostileGuestInput plays a guest that is not Bumper's agent against the host's
// side of a command's input. Whatever it sends, the host writes nothing in answer, tells
// Placed nothing it was not sent, and each file it sent is told once; a guest that
// answers for a file it was not sent, twice, in a malformed answer, for a command with
// no steering directory, or sends the host's own frame types, ends the Run with an
// error and the VM killed.
func TestHostileGuestInput(t *testing.T) {
	tests := []struct {
		name string
		// steering gives the command a steering directory with one file, "001-a.md".
		steering bool
		// play is what the guest does after reading the run request and, with steering,
		// the file's frame.
		play func(g *fakeGuest)
		want string
		// wantPlaced is what Placed was told.
		wantPlaced []string
	}{
		{"answers for a file it was not sent", true, func(g *fakeGuest) {
			g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: "002-guessed.md"})
		}, "which it was not sent", []string{"001-a.md: " + ErrInputEnded.Error()}},
		{"answers twice", true, func(g *fakeGuest) {
			g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: "001-a.md"})
			g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: "001-a.md", Error: "changed its mind"})
		}, "answered for already", []string{"001-a.md: placed"}},
		{"floods answers", true, func(g *fakeGuest) {
			for range 10000 {
				if g.w.Write(agentproto.TypeSteered, []byte(`{"name":"001-a.md"}`)) != nil {
					return
				}
			}
		}, "answered for already", []string{"001-a.md: placed"}},
		{"an answer naming a path", true, func(g *fakeGuest) {
			g.send(agentproto.TypeSteered, `{"name":"../../root/.ssh/authorized_keys"}`)
		}, "invalid steering answer", []string{"001-a.md: " + ErrInputEnded.Error()}},
		{"an answer with fields of its own", true, func(g *fakeGuest) {
			g.send(agentproto.TypeSteered, `{"name":"001-a.md","argv":["sh"]}`)
		}, "unknown field", []string{"001-a.md: " + ErrInputEnded.Error()}},
		{"an answer too long", true, func(g *fakeGuest) {
			g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: "001-a.md", Error: strings.Repeat("e", 5000)})
		}, "exceeds", []string{"001-a.md: " + ErrInputEnded.Error()}},
		{"an answer for a command without steering", false, func(g *fakeGuest) {
			g.send(agentproto.TypeSteered, agentproto.SteerAck{Name: "001-a.md"})
		}, "has no steering directory", nil},
		{"the host's input frame", true, func(g *fakeGuest) {
			g.send(agentproto.TypeStdin, "to the host")
		}, "not accepted", []string{"001-a.md: " + ErrInputEnded.Error()}},
		{"the host's steer frame", true, func(g *fakeGuest) {
			g.send(agentproto.TypeSteer, agentproto.SteerFile{Name: "x", Data: []byte("y")})
		}, "not accepted", []string{"001-a.md: " + ErrInputEnded.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, g := pipeMachine(t)
			log := &placedLog{}
			var in *Input
			if tt.steering {
				in = NewInput(InputConfig{Steering: true, Placed: log.placed})
				if err := in.Place("001-a.md", []byte("a")); err != nil {
					t.Fatal(err)
				}
			}
			hostWrote := make(chan []string, 1)
			go func() {
				g.request(t)
				if tt.steering {
					if f, err := g.r.Read(); err != nil || f.Type != agentproto.TypeSteer {
						t.Errorf("the guest got %v %v, want the file", f.Type, err)
					}
				}
				tt.play(g)
				// Anything the host writes from now on is an answer to the attack.
				var wrote []string
				for {
					f, err := g.r.Read()
					if err != nil {
						break
					}
					wrote = append(wrote, f.Type.String())
				}
				hostWrote <- wrote
			}()
			var inputs []*Input
			if in != nil {
				inputs = append(inputs, in)
			}
			res, err := m.Run(context.Background(), []string{"agent"}, nil, nil, nil, inputs...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %+v, %v; want an error saying %q", res, err, tt.want)
			}
			if !m.isKilled() && !strings.Contains(tt.want, "not accepted") {
				t.Error("the VM of a guest that lied was not killed")
			}
			_ = g.host.Close()
			if wrote := <-hostWrote; len(wrote) > 0 {
				t.Errorf("the host answered the attack with %v", wrote)
			}
			if got := log.log(); strings.Join(got, "\n") != strings.Join(tt.wantPlaced, "\n") {
				t.Errorf("Placed was told %q, want %q", got, tt.wantPlaced)
			}
		})
	}
}

// TestInputAfterABrokenSnapshot: a warm start whose snapshot did not restore read none
// of the command's input; the cold boot's Run sends it all again, from the start.
func TestInputAfterABrokenSnapshot(t *testing.T) {
	log := &placedLog{}
	in := NewInput(InputConfig{Stdin: true, Steering: true, Placed: log.placed})
	if _, err := in.Write([]byte("prompt\n")); err != nil {
		t.Fatal(err)
	}
	if err := in.Place("001-a.md", []byte("a")); err != nil {
		t.Fatal(err)
	}
	warm, g := pipeMachine(t)
	warm.restoring, warm.exitCode = "snapshots/x", 1
	read := make(chan int)
	go func() {
		g.request(t)
		n := 0
		for n < 2 {
			if _, err := g.r.Read(); err != nil {
				break
			}
			n++
		}
		// QEMU gives up on the state file: the channel closes, QEMU exits with 1.
		close(warm.exited)
		_ = g.host.Close()
		read <- n
	}()
	_, err := warm.Run(context.Background(), []string{"agent"}, nil, nil, nil, in)
	var re *RestoreError
	if !errors.As(err, &re) || <-read != 2 {
		t.Fatalf("warm Run = %v", err)
	}
	if got := log.log(); len(got) != 0 {
		t.Fatalf("Placed told %v of a command that never ran", got)
	}
	cold, g2 := pipeMachine(t)
	go func() {
		g2.request(t)
		var got []string
		for len(got) < 2 {
			f, err := g2.r.Read()
			if err != nil {
				break
			}
			got = append(got, f.Type.String()+" "+string(f.Payload))
		}
		if strings.Join(got, "|") != `stdin prompt
|steer {"name":"001-a.md","data":"YQ=="}` {
			t.Errorf("the cold boot's guest got %q", got)
		}
		g2.send(agentproto.TypeSteered, agentproto.SteerAck{Name: "001-a.md"})
		g2.send(agentproto.TypeResult, agentproto.Result{})
	}()
	if _, err := cold.Run(context.Background(), []string{"agent"}, nil, nil, nil, in); err != nil {
		t.Fatal(err)
	}
	if got := log.log(); strings.Join(got, "|") != "001-a.md: placed" {
		t.Fatalf("Placed was told %q", got)
	}
}
