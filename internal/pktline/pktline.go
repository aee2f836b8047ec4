// Package pktline reads and writes git's pkt-line framing, and parses the command list
// of a git-receive-pack request. The git server of the GitHub emulator and the
// firewall's git push policy both decide on a push from what this package reads, so it
// validates strictly: anything it cannot vouch for is an error, never a guess.
package pktline

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

const (
	// MaxPacketLen is the largest pkt-line git accepts, length prefix included
	// (LARGE_PACKET_MAX in git's pkt-line.h).
	MaxPacketLen = 65520
	// MaxPayloadLen is the most data one pkt-line can carry.
	MaxPayloadLen = MaxPacketLen - 4
)

// Kind tells a data packet from the special zero-payload packets.
type Kind int

const (
	// Data is an ordinary packet carrying a payload (possibly empty, "0004").
	Data Kind = iota
	// Flush is "0000": the end of a list or message.
	Flush
	// Delim is "0001": a section delimiter (protocol v2 only).
	Delim
	// ResponseEnd is "0002": the end of a stateless response (protocol v2 only).
	ResponseEnd
)

// String names the kind as git's documentation does.
func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Flush:
		return "flush-pkt"
	case Delim:
		return "delim-pkt"
	case ResponseEnd:
		return "response-end-pkt"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ErrTooLong reports a pkt-line whose length prefix exceeds MaxPacketLen, or a payload
// too big to be written as one.
var ErrTooLong = errors.New("pkt-line longer than 65520 bytes")

// ErrBadLength reports a length prefix that is not four hex digits, or the reserved
// length 0003.
var ErrBadLength = errors.New("invalid pkt-line length prefix")

// Packet is one pkt-line as read from the wire.
type Packet struct {
	Kind Kind
	// Payload is the data after the length prefix; nil for special packets.
	Payload []byte
}

// ReadPacket reads exactly one pkt-line from r and nothing more, so that what follows
// can still be read (or forwarded) from r. A stream that ends before the first byte of
// a packet gives io.EOF; one that ends inside a packet gives io.ErrUnexpectedEOF.
func ReadPacket(r io.Reader) (Packet, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return Packet{}, err
	}
	n, err := parseLength(prefix)
	if err != nil {
		return Packet{}, err
	}
	switch n {
	case 0:
		return Packet{Kind: Flush}, nil
	case 1:
		return Packet{Kind: Delim}, nil
	case 2:
		return Packet{Kind: ResponseEnd}, nil
	case 3:
		return Packet{}, fmt.Errorf("%w: %q is reserved", ErrBadLength, prefix[:])
	}
	if n > MaxPacketLen {
		return Packet{}, fmt.Errorf("%w: prefix %q says %d", ErrTooLong, prefix[:], n)
	}
	payload := make([]byte, n-4)
	if _, err := io.ReadFull(r, payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Packet{}, fmt.Errorf("failed to read %d-byte pkt-line payload: %w", n-4, err)
	}
	return Packet{Kind: Data, Payload: payload}, nil
}

func parseLength(prefix [4]byte) (int, error) {
	// ParseUint in base 16 takes hex digits of either case and nothing else: no sign,
	// no 0x prefix, no underscores.
	n, err := strconv.ParseUint(string(prefix[:]), 16, 16)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not four hex digits", ErrBadLength, prefix[:])
	}
	return int(n), nil
}

// AppendPacket appends payload framed as one data pkt-line to dst.
func AppendPacket(dst, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayloadLen {
		return dst, fmt.Errorf("%w: payload is %d bytes", ErrTooLong, len(payload))
	}
	dst = fmt.Appendf(dst, "%04x", len(payload)+4)
	return append(dst, payload...), nil
}

// AppendString is AppendPacket for a string payload.
func AppendString(dst []byte, payload string) ([]byte, error) {
	return AppendPacket(dst, []byte(payload))
}

// AppendFlush appends a flush-pkt ("0000") to dst.
func AppendFlush(dst []byte) []byte {
	return append(dst, "0000"...)
}
