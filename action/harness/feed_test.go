package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// fakeFeed records what a harness fed its command.
type fakeFeed struct {
	mu     sync.Mutex
	stdin  bytes.Buffer
	closed bool
	ended  bool
	// files are the files placed, in order.
	files []fakeFile
	// wrote and placed are signalled after each Write and Place.
	wrote, placed chan struct{}
}

type fakeFile struct{ name, data string }

func newFakeFeed() *fakeFeed {
	return &fakeFeed{wrote: make(chan struct{}, 1), placed: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (f *fakeFeed) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended || f.closed {
		return 0, errors.New("fake feed: closed")
	}
	defer signal(f.wrote)
	return f.stdin.Write(p)
}

func (f *fakeFeed) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *fakeFeed) CloseStdin() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeFeed) Place(name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return errors.New("fake feed: ended")
	}
	f.files = append(f.files, fakeFile{name, string(data)})
	signal(f.placed)
	return nil
}

// end ends the command's input and tells in.Placed about every file, placed or not.
func (f *fakeFeed) end(in *Input, placed bool) {
	f.mu.Lock()
	f.ended = true
	files := append([]fakeFile(nil), f.files...)
	f.mu.Unlock()
	if in.Placed == nil {
		return
	}
	for _, file := range files {
		if placed {
			in.Placed(file.name, time.Now(), nil)
		} else {
			in.Placed(file.name, time.Time{}, ErrCommandEnded)
		}
	}
}

// messages are the stream-json lines written on standard input, decoded strictly.
func (f *fakeFeed) messages() ([]claudeUserMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []claudeUserMessage
	sc := bufio.NewScanner(bytes.NewReader(f.stdin.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m claudeUserMessage
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("line %q: %w", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// localFeed is a command's Input on this machine, as the VM's agent gives it: a pipe
// to its standard input, and a steering directory whose files are written under a
// temporary name and renamed into place; Placed is told from the goroutine of the
// exec that runs the command.
type localFeed struct {
	mu    sync.Mutex
	stdin io.WriteCloser
	dir   string
	ended bool
	acks  chan string
}

// startLocal sets cmd up for in (nil: no input) before it starts: its standard input,
// its steering directory under root (named in its environment), then Ready.
func startLocal(cmd *exec.Cmd, root string, in []Input) (*localFeed, error) {
	if len(in) == 0 {
		return nil, nil
	}
	f := &localFeed{acks: make(chan string, 1024)}
	if in[0].Stdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		f.stdin = w
	}
	if in[0].Steering {
		f.dir = filepath.Join(root, "steer")
		_ = os.RemoveAll(f.dir)
		if err := os.Mkdir(f.dir, 0o755); err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, SteerDirEnv+"="+f.dir)
	}
	if in[0].Ready != nil {
		in[0].Ready(f)
	}
	return f, nil
}

func (f *localFeed) Write(p []byte) (int, error) {
	f.mu.Lock()
	w, ended := f.stdin, f.ended
	f.mu.Unlock()
	if w == nil || ended {
		return 0, errors.New("local feed: no standard input")
	}
	return w.Write(p)
}

func (f *localFeed) CloseStdin() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stdin == nil {
		return errors.New("local feed: no standard input")
	}
	return f.stdin.Close()
}

func (f *localFeed) Place(name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir == "" || f.ended {
		return errors.New("local feed: no steering directory")
	}
	tmp := filepath.Join(f.dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
		return err
	}
	f.acks <- name
	return nil
}

// wait waits for the command, telling in.Placed about each file as it is placed.
func (f *localFeed) wait(cmd *exec.Cmd, in []Input) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	placed := func(name string) {
		if in[0].Placed != nil {
			in[0].Placed(name, time.Now(), nil)
		}
	}
	for {
		select {
		case name := <-f.acks:
			placed(name)
		case err := <-done:
			f.mu.Lock()
			f.ended = true
			f.mu.Unlock()
			for {
				select {
				case name := <-f.acks:
					placed(name)
				default:
					return err
				}
			}
		}
	}
}

// runLocal runs cmd with in (at most one Input), as the VM's session would.
func runLocal(cmd *exec.Cmd, root string, in []Input) error {
	f, err := startLocal(cmd, root, in)
	if err != nil {
		return err
	}
	if f == nil {
		return cmd.Run()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	return f.wait(cmd, in)
}
