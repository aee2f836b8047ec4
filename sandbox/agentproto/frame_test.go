package agentproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		typ     Type
		payload []byte
	}{
		{"empty shutdown", TypeShutdown, nil},
		{"small output", TypeStdout, []byte("hello\n")},
		{"binary output", TypeStderr, []byte{0, 1, 2, 255}},
		{"largest frame", TypeStdout, bytes.Repeat([]byte("x"), MaxFrameSize-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := NewWriter(&buf).Write(tt.typ, tt.payload); err != nil {
				t.Fatalf("Write: %v", err)
			}
			f, err := NewReader(&buf, tt.typ).Read()
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if f.Type != tt.typ || !bytes.Equal(f.Payload, tt.payload) {
				t.Fatalf("got %s %d bytes, want %s %d bytes", f.Type, len(f.Payload), tt.typ, len(tt.payload))
			}
			if _, err := NewReader(&buf, tt.typ).Read(); !errors.Is(err, io.EOF) {
				t.Fatalf("second Read = %v, want io.EOF", err)
			}
		})
	}
}

func header(n uint32, t Type) []byte {
	b := make([]byte, 5)
	binary.BigEndian.PutUint32(b, n)
	b[4] = byte(t)
	return b
}

func TestReadRejects(t *testing.T) {
	tests := []struct {
		name    string
		input   []byte
		allowed []Type
		want    error
	}{
		{"over maximum", header(MaxFrameSize+1, TypeStdout), GuestTypes, ErrFrameTooLarge},
		{"huge length", header(0xffffffff, TypeStdout), GuestTypes, ErrFrameTooLarge},
		{"run frame from guest", append(header(3, TypeRun), '{', '}'), GuestTypes, ErrUnexpectedType},
		{"result frame to guest", append(header(3, TypeResult), '{', '}'), HostTypes, ErrUnexpectedType},
		{"prepare frame from guest", append(header(3, TypePrepare), '{', '}'), GuestTypes, ErrUnexpectedType},
		{"prepared frame to guest", header(1, TypePrepared), HostTypes, ErrUnexpectedType},
		// The input of a running command flows host→guest only: a guest cannot write
		// into the host, and the host cannot be told it placed a file.
		{"stdin frame from guest", append(header(2, TypeStdin), 'x'), GuestTypes, ErrUnexpectedType},
		{"stdin-close frame from guest", header(1, TypeStdinClose), GuestTypes, ErrUnexpectedType},
		{"steer frame from guest", append(header(3, TypeSteer), '{', '}'), GuestTypes, ErrUnexpectedType},
		{"steered frame to guest", append(header(3, TypeSteered), '{', '}'), HostTypes, ErrUnexpectedType},
		{"unknown type", header(1, Type(99)), GuestTypes, ErrUnexpectedType},
		{"truncated payload", append(header(10, TypeStdout), 'a'), GuestTypes, io.ErrUnexpectedEOF},
		{"truncated header", []byte{0, 0}, GuestTypes, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tt.input), tt.allowed...).Read()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Read = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("zero length", func(t *testing.T) {
		if _, err := NewReader(bytes.NewReader(header(0, TypeStdout)), GuestTypes...).Read(); err == nil {
			t.Fatal("Read of a zero-length frame succeeded")
		}
	})
}

func TestWriteRejectsOversize(t *testing.T) {
	var buf bytes.Buffer
	err := NewWriter(&buf).Write(TypeStdout, make([]byte, MaxFrameSize))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("Write = %v, want ErrFrameTooLarge", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("Write wrote %d bytes of a rejected frame", buf.Len())
	}
}

// TestConcurrentWriters checks that frames from concurrent writers never interleave.
func TestConcurrentWriters(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	w := NewWriter(a)
	const perWriter = 50
	payloads := map[Type][]byte{TypeStdout: bytes.Repeat([]byte("o"), 4000), TypeStderr: bytes.Repeat([]byte("e"), 3000)}
	for typ, p := range payloads {
		go func() {
			for range perWriter {
				if err := w.Write(typ, p); err != nil {
					return
				}
			}
		}()
	}
	r := NewReader(b, GuestTypes...)
	for range 2 * perWriter {
		f, err := r.Read()
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if !bytes.Equal(f.Payload, payloads[f.Type]) {
			t.Fatalf("%s frame corrupted", f.Type)
		}
	}
}
