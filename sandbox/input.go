package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// ErrInputEnded is what an Input's methods return once its command has ended (or its
// Run failed): nothing more reaches the command.
var ErrInputEnded = errors.New("the command has ended: it takes no more input")

// MaxInputQueued bounds what an Input holds for its command before the host has sent
// it (a command that does not read its standard input leaves it queued): past it,
// Write and Place refuse.
const MaxInputQueued = 8 << 20

// InputConfig is what a command takes while it runs.
type InputConfig struct {
	// Stdin makes the command's standard input a pipe that Write feeds and CloseStdin
	// closes; without it the command reads /dev/null.
	Stdin bool
	// Steering gives the command a steering directory, named by $BUMPER_STEER_DIR
	// (agentproto.SteerDirEnv) in its environment: empty, readable by the command's
	// user, writable only by the guest's agent, which places there each file Place
	// sends and removes it all when the command ends.
	Steering bool
	// Placed is told, once for each file Place accepted, when the guest said the file
	// is in the steering directory (err nil), or why it is not (the guest's refusal, or
	// ErrInputEnded when the command ended first). It is called from the goroutine of
	// the Run the Input was given to, before Run returns, and must not block.
	Placed func(name string, at time.Time, err error)
}

// Input is the way into a command while it runs: what the host writes to its standard
// input and the files it places in its steering directory. Make one with NewInput,
// give it to one Run (Session.Run, Machine.Run), and call its methods from any
// goroutine: before the command starts what they send waits, in order; once it has
// ended they return ErrInputEnded. Everything goes host→guest: the guest's only answer
// is whether a file was placed, and the host takes it only for a file it sent.
type Input struct {
	cfg InputConfig

	mu sync.Mutex
	// queue holds what waits to be sent, queued its size in bytes; wake tells the
	// sender there is more.
	queue  []inputItem
	queued int
	wake   chan struct{}
	// claimed says a Run took the Input; ended that its command ended.
	claimed, ended bool
	stdinClosed    bool
	// files are the files Place accepted, by name, and how far each got.
	files map[string]fileState
	// unconfirmed holds what was sent before the guest said anything in this Run: a
	// snapshot that failed to restore read none of it, and a cold boot sends it again.
	unconfirmed []inputItem
	confirmed   bool
}

// fileState is how far a file of Place got.
type fileState int

const (
	fileQueued   fileState = iota // waits to be sent
	fileSent                      // sent (or being sent): the guest may answer
	fileAnswered                  // the guest answered, or the command ended first
)

type inputKind int

const (
	inputStdin inputKind = iota
	inputClose
	inputFile
)

type inputItem struct {
	kind inputKind
	data []byte
	name string
}

// NewInput returns an Input for one command.
func NewInput(cfg InputConfig) *Input {
	return &Input{cfg: cfg, wake: make(chan struct{}, 1), files: map[string]fileState{}}
}

// Write sends p to the command's standard input (in frames of at most
// agentproto.MaxChunk bytes). It does not wait for the command to read it.
func (in *Input) Write(p []byte) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.ended:
		return 0, ErrInputEnded
	case !in.cfg.Stdin:
		return 0, errors.New("failed to write to the command's input: it reads none (InputConfig.Stdin)")
	case in.stdinClosed:
		return 0, errors.New("failed to write to the command's input: it was closed")
	}
	if err := in.addLocked(inputItem{kind: inputStdin, data: append([]byte(nil), p...)}); err != nil {
		return 0, fmt.Errorf("failed to write to the command's input: %w", err)
	}
	return len(p), nil
}

// CloseStdin closes the command's standard input: it reads end of file after what was
// written. A second call does nothing.
func (in *Input) CloseStdin() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.cfg.Stdin {
		return errors.New("failed to close the command's input: it reads none (InputConfig.Stdin)")
	}
	if in.stdinClosed {
		return nil
	}
	if err := in.addLocked(inputItem{kind: inputClose}); err != nil {
		return fmt.Errorf("failed to close the command's input: %w", err)
	}
	in.stdinClosed = true
	return nil
}

// Place sends a file for the command's steering directory: name (one path component,
// agentproto.CheckSteerName), never one placed before, at most agentproto.MaxSteerFile
// bytes, at most agentproto.MaxSteerFiles per command. InputConfig.Placed says when it
// is in place.
func (in *Input) Place(name string, data []byte) error {
	f := agentproto.SteerFile{Name: name, Data: data}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("failed to place a steering file: %w", err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	switch _, seen := in.files[name]; {
	case in.ended:
		return ErrInputEnded
	case !in.cfg.Steering:
		return errors.New("failed to place a steering file: the command has no steering directory (InputConfig.Steering)")
	case seen:
		return fmt.Errorf("failed to place steering file %s: a file of that name was placed already", name)
	case len(in.files) >= agentproto.MaxSteerFiles:
		return fmt.Errorf("failed to place steering file %s: the command has been given %d, the most it may have", name, agentproto.MaxSteerFiles)
	}
	if err := in.addLocked(inputItem{kind: inputFile, name: name, data: append([]byte(nil), data...)}); err != nil {
		return fmt.Errorf("failed to place steering file %s: %w", name, err)
	}
	in.files[name] = fileQueued
	return nil
}

// addLocked queues it; in.mu is held.
func (in *Input) addLocked(it inputItem) error {
	if in.ended {
		return ErrInputEnded
	}
	if in.queued+len(it.data) > MaxInputQueued {
		return fmt.Errorf("%d bytes already wait for the command, which does not take them (at most %d may wait)", in.queued, MaxInputQueued)
	}
	in.queue = append(in.queue, it)
	in.queued += len(it.data)
	select {
	case in.wake <- struct{}{}:
	default:
	}
	return nil
}

// claim gives the Input to a Run, once.
func (in *Input) claim() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.ended:
		return ErrInputEnded
	case in.claimed:
		return errors.New("the input is given to another command already: an Input serves one command")
	}
	in.claimed = true
	return nil
}

// next waits for the next item to send, or for stop; false when stopped.
func (in *Input) next(stop <-chan struct{}) (inputItem, bool) {
	for {
		in.mu.Lock()
		if len(in.queue) > 0 {
			it := in.queue[0]
			in.queue = in.queue[1:]
			in.queued -= len(it.data)
			if it.kind == inputFile {
				// Before it is written: the guest may answer as soon as it has read it.
				in.files[it.name] = fileSent
			}
			if !in.confirmed {
				in.unconfirmed = append(in.unconfirmed, it)
			}
			in.mu.Unlock()
			return it, true
		}
		in.mu.Unlock()
		select {
		case <-stop:
			return inputItem{}, false
		case <-in.wake:
		}
	}
}

// send writes the Input's items to the guest until stop closes or a write fails.
func (in *Input) send(w *agentproto.Writer, stop <-chan struct{}) {
	for {
		it, ok := in.next(stop)
		if !ok {
			return
		}
		var err error
		switch it.kind {
		case inputStdin:
			for p := it.data; len(p) > 0 && err == nil; p = p[min(len(p), agentproto.MaxChunk):] {
				err = w.Write(agentproto.TypeStdin, p[:min(len(p), agentproto.MaxChunk)])
			}
		case inputClose:
			err = w.Write(agentproto.TypeStdinClose, nil)
		case inputFile:
			var payload []byte
			if payload, err = agentproto.Encode(agentproto.SteerFile{Name: it.name, Data: it.data}); err == nil {
				err = w.Write(agentproto.TypeSteer, payload)
			}
		}
		if err != nil {
			// The channel broke: the Run's reader finds out and says why.
			return
		}
	}
}

// confirm notes that the guest spoke in this Run: what was sent reached a live agent.
func (in *Input) confirm() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.confirmed, in.unconfirmed = true, nil
}

// placed takes the guest's answer for a file: it must name one this Input sent and
// that has not been answered yet, or the guest is not one of Bumper's.
func (in *Input) placed(ack agentproto.SteerAck) error {
	in.mu.Lock()
	if state, ok := in.files[ack.Name]; !ok || state != fileSent {
		in.mu.Unlock()
		return fmt.Errorf("the guest answered for steering file %q, which it was not sent or was answered for already", ack.Name)
	}
	in.files[ack.Name] = fileAnswered
	in.mu.Unlock()
	var err error
	if ack.Error != "" {
		err = fmt.Errorf("the guest did not place steering file %s: %s", ack.Name, ack.Error)
	}
	in.tell(ack.Name, time.Now(), err)
	return nil
}

// rewind puts back what was sent to a guest that never spoke (a snapshot that failed
// to restore: the command never ran) and frees the Input for the cold boot's Run.
func (in *Input) rewind() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.queue = append(in.unconfirmed, in.queue...)
	in.queued = 0
	for _, it := range in.queue {
		in.queued += len(it.data)
		if it.kind == inputFile {
			in.files[it.name] = fileQueued
		}
	}
	in.unconfirmed, in.claimed = nil, false
	if len(in.queue) > 0 {
		select {
		case in.wake <- struct{}{}:
		default:
		}
	}
}

// end closes the Input: its methods refuse from now on, and each file not answered
// is told ErrInputEnded.
func (in *Input) end() {
	in.mu.Lock()
	in.ended = true
	in.queue, in.queued, in.unconfirmed = nil, 0, nil
	var unanswered []string
	for name, state := range in.files {
		if state != fileAnswered {
			unanswered = append(unanswered, name)
			in.files[name] = fileAnswered
		}
	}
	in.mu.Unlock()
	// In name order: the order a steering directory is read in.
	slices.Sort(unanswered)
	for _, name := range unanswered {
		in.tell(name, time.Time{}, ErrInputEnded)
	}
}

func (in *Input) tell(name string, at time.Time, err error) {
	if in.cfg.Placed != nil {
		in.cfg.Placed(name, at, err)
	}
}
