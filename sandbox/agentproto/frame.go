// Package agentproto is the framed protocol between the host and Bumper's guest agent.
//
// A frame is a 4-byte big-endian length, then a type byte, then the payload; the length
// counts the type byte and the payload. Both ends enforce MaxFrameSize before allocating,
// so a hostile peer cannot make the other side buffer more than that. Which frame types
// each side accepts is fixed here: the host accepts only what a guest may report (hello,
// output, result), the guest only what the host may ask (run, shutdown). No frame type
// makes the host execute anything. While a command runs, input flows host→guest only
// (its standard input, files for its steering directory); the guest's one answer to it
// says whether a file was placed, naming a file the host sent. The device names both
// ends agree on (the agent's virtio-serial port, the disks' serials) are here too, so
// neither side imports the other.
package agentproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxFrameSize is the largest frame (type byte + payload) either end reads or writes.
const MaxFrameSize = 1 << 20

// MaxChunk is the largest output payload the guest sends in one frame.
const MaxChunk = 32 << 10

// Type says what a frame carries.
type Type byte

// Frame types. Guest→host: Hello, Stdout, Stderr, Result, Prepared, Steered. Host→guest:
// Run, Shutdown, Prepare, and while a command runs Stdin, StdinClose and Steer.
const (
	TypeHello    Type = 1 // guest→host, JSON Hello: the agent is ready for a Run
	TypeRun      Type = 2 // host→guest, JSON Run: configure the guest and run a command
	TypeStdout   Type = 3 // guest→host, raw bytes of the command's stdout
	TypeStderr   Type = 4 // guest→host, raw bytes of the command's stderr
	TypeResult   Type = 5 // guest→host, JSON Result: the command has ended
	TypeShutdown Type = 6 // host→guest, empty: sync and power off
	TypePrepare  Type = 7 // host→guest, JSON Prepare: get ready to be snapshotted
	TypePrepared Type = 8 // guest→host, empty: prepared, idle, and may be saved now
	// TypeStdin, TypeStdinClose and TypeSteer go to the command that runs (Run.Stdin,
	// Run.Steering); one that arrives after it ended is dropped.
	TypeStdin      Type = 9  // host→guest, raw bytes (≤ MaxChunk) for the command's standard input
	TypeStdinClose Type = 10 // host→guest, empty: close the command's standard input
	TypeSteer      Type = 11 // host→guest, JSON SteerFile: place a file in the command's steering directory
	TypeSteered    Type = 12 // guest→host, JSON SteerAck: the file of a Steer is in place, or why not
)

func (t Type) String() string {
	switch t {
	case TypeHello:
		return "hello"
	case TypeRun:
		return "run"
	case TypeStdout:
		return "stdout"
	case TypeStderr:
		return "stderr"
	case TypeResult:
		return "result"
	case TypeShutdown:
		return "shutdown"
	case TypePrepare:
		return "prepare"
	case TypePrepared:
		return "prepared"
	case TypeStdin:
		return "stdin"
	case TypeStdinClose:
		return "stdin-close"
	case TypeSteer:
		return "steer"
	case TypeSteered:
		return "steered"
	}
	return fmt.Sprintf("type(%d)", byte(t))
}

// GuestTypes are the frame types the host accepts from a guest.
var GuestTypes = []Type{TypeHello, TypeStdout, TypeStderr, TypeResult, TypePrepared, TypeSteered}

// HostTypes are the frame types the guest accepts from the host.
var HostTypes = []Type{TypeRun, TypeShutdown, TypePrepare, TypeStdin, TypeStdinClose, TypeSteer}

// ErrFrameTooLarge is returned when a frame's declared length exceeds MaxFrameSize.
var ErrFrameTooLarge = errors.New("frame larger than the protocol maximum")

// ErrUnexpectedType is returned when a peer sends a frame type this end does not accept.
var ErrUnexpectedType = errors.New("frame type not accepted from this peer")

// Frame is one decoded frame.
type Frame struct {
	Type    Type
	Payload []byte
}

// Reader reads frames, accepting only a fixed set of types.
type Reader struct {
	r       io.Reader
	allowed [256]bool
	header  [5]byte
}

// NewReader returns a Reader over r that rejects any type not in allowed.
func NewReader(r io.Reader, allowed ...Type) *Reader {
	fr := &Reader{r: r}
	for _, t := range allowed {
		fr.allowed[t] = true
	}
	return fr
}

// Read returns the next frame. It fails without reading the payload when the length is
// out of bounds or the type is not accepted; the stream is then unusable.
func (fr *Reader) Read() (Frame, error) {
	if _, err := io.ReadFull(fr.r, fr.header[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Frame{}, fmt.Errorf("failed to read frame header: %w", err)
		}
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(fr.header[:4])
	t := Type(fr.header[4])
	if n == 0 {
		return Frame{}, fmt.Errorf("failed to read frame: zero length (a frame holds at least its type byte)")
	}
	if n > MaxFrameSize {
		return Frame{}, fmt.Errorf("failed to read %s frame of %d bytes (max %d): %w", t, n, MaxFrameSize, ErrFrameTooLarge)
	}
	if !fr.allowed[t] {
		return Frame{}, fmt.Errorf("failed to read frame: %s: %w", t, ErrUnexpectedType)
	}
	payload := make([]byte, n-1)
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		return Frame{}, fmt.Errorf("failed to read %s frame payload: %w", t, err)
	}
	return Frame{Type: t, Payload: payload}, nil
}

// Writer writes frames; it is safe for concurrent use so stdout and stderr pumps can
// share one channel.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sends one frame of type t.
func (fw *Writer) Write(t Type, payload []byte) error {
	if len(payload)+1 > MaxFrameSize {
		return fmt.Errorf("failed to write %s frame of %d bytes (max %d): %w", t, len(payload)+1, MaxFrameSize, ErrFrameTooLarge)
	}
	buf := make([]byte, 5+len(payload))
	binary.BigEndian.PutUint32(buf[:4], uint32(len(payload)+1))
	buf[4] = byte(t)
	copy(buf[5:], payload)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if _, err := fw.w.Write(buf); err != nil {
		return fmt.Errorf("failed to write %s frame: %w", t, err)
	}
	return nil
}
