package pktline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// MaxCommands caps the ref updates one receive-pack request may carry. Real pushes name
// a handful of refs; a mirror push of a large repository may name thousands, which the
// emulator and the firewall have no reason to accept.
const MaxCommands = 4096

// MaxCommandListBytes caps the size of a command list, so that a hostile client cannot
// make a reader hold MaxCommands packets of 65520 bytes each (about 256 MiB). 4096
// commands with long ref names fit well within it.
const MaxCommandListBytes = 4 << 20

// ErrPushCert reports a signed push (git push --signed). Bumper neither asks for nor
// checks push certificates, and parsing a certificate only to ignore it would widen
// what the firewall must get right, so such a push is refused.
var ErrPushCert = errors.New("signed pushes (push certificates) are not supported; push without --signed")

// RefUpdate is one command of a receive-pack request: "<old> <new> <ref>".
type RefUpdate struct {
	// Old is the object the ref points at now, all zeros when the push creates it.
	Old string
	// New is the object the ref should point at, all zeros when the push deletes it.
	New string
	// Ref is the full reference name, for example "refs/heads/main".
	Ref string
}

// IsCreate reports whether the update creates a ref that does not exist yet.
func (u RefUpdate) IsCreate() bool { return ZeroOID(u.Old) }

// IsDelete reports whether the update deletes the ref.
func (u RefUpdate) IsDelete() bool { return ZeroOID(u.New) }

// String renders the update as it appears on the wire.
func (u RefUpdate) String() string { return u.Old + " " + u.New + " " + u.Ref }

// CommandList is the part of a receive-pack request body before the pack data.
type CommandList struct {
	// Updates are the ref updates in the order the client sent them. A request with no
	// updates is legal: git sends a bare flush-pkt to probe authentication before a
	// large push.
	Updates []RefUpdate
	// Capabilities are those the client asked for on its first command, for example
	// "report-status", "side-band-64k", "object-format=sha1", "agent=git/2.39.5".
	Capabilities []string
	// Shallow holds the object names of "shallow" lines sent by a shallow clone.
	Shallow []string
	// Raw is every byte ReadCommands consumed, flush-pkt included. A proxy forwards Raw
	// unchanged, followed by the rest of the body.
	Raw []byte
}

// HasCapability reports whether the client asked for capability name, either bare
// ("report-status") or with a value ("agent" matches "agent=git/2.39.5").
func (c *CommandList) HasCapability(name string) bool {
	return slices.ContainsFunc(c.Capabilities, func(cp string) bool {
		return cp == name || strings.HasPrefix(cp, name+"=")
	})
}

// ObjectFormat is the hash the client declared ("sha1" unless it said otherwise).
func (c *CommandList) ObjectFormat() string {
	for _, cp := range c.Capabilities {
		if v, ok := strings.CutPrefix(cp, "object-format="); ok {
			return v
		}
	}
	return "sha1"
}

// ReadCommands reads the command list of a git-receive-pack request body: optional
// "shallow" lines, then pkt-lines of "<old> <new> <ref>" (the first one followed by NUL
// and the capability list) up to the flush-pkt. It reads nothing past that flush-pkt,
// so the pack data (or push options) can still be read from r.
//
// It refuses bad length prefixes, packets over 65520 bytes, special packets other than
// the flush, object names that are not 40 or 64 lowercase hex digits (or that do not
// match the declared object-format), ref names git check-ref-format would refuse or that
// are outside refs/, a ref named twice, more than MaxCommands updates or
// MaxCommandListBytes bytes, and push certificates (ErrPushCert).
func ReadCommands(r io.Reader) (*CommandList, error) {
	cl := &CommandList{}
	// Raw must hold the bytes exactly as sent (a length prefix may be uppercase hex),
	// so it is taken from the stream rather than re-encoded.
	var raw bytes.Buffer
	tr := io.TeeReader(r, &raw)
	seen := make(map[string]bool)
	for {
		pkt, err := ReadPacket(tr)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("failed to read receive-pack command %d: %w", len(cl.Updates)+1, err)
		}
		if raw.Len() > MaxCommandListBytes {
			return nil, fmt.Errorf("receive-pack command list is over %d bytes; push fewer refs at a time", MaxCommandListBytes)
		}
		switch pkt.Kind {
		case Flush:
			cl.Raw = raw.Bytes()
			return cl, nil
		case Data:
		default:
			return nil, fmt.Errorf("unexpected %s in a receive-pack command list", pkt.Kind)
		}
		line := pkt.Payload
		if bytes.HasPrefix(line, []byte("push-cert\x00")) || bytes.Equal(bytes.TrimSuffix(line, []byte("\n")), []byte("push-cert")) {
			return nil, ErrPushCert
		}
		if oid, ok := bytes.CutPrefix(line, []byte("shallow ")); ok {
			if len(cl.Updates) > 0 {
				return nil, errors.New("a shallow line came after a command; shallow lines must come first")
			}
			oid = bytes.TrimSuffix(oid, []byte("\n"))
			if err := CheckOID(string(oid)); err != nil {
				return nil, fmt.Errorf("bad shallow line: %w", err)
			}
			cl.Shallow = append(cl.Shallow, string(oid))
			continue
		}
		if len(cl.Updates) == MaxCommands {
			return nil, fmt.Errorf("receive-pack request has more than %d ref updates; push fewer refs at a time", MaxCommands)
		}
		first := len(cl.Updates) == 0
		if first {
			cmd, caps, ok := bytes.Cut(line, []byte{0})
			if ok {
				if cl.Capabilities, err = parseCapabilities(caps); err != nil {
					return nil, err
				}
			}
			line = cmd
		} else if bytes.IndexByte(line, 0) >= 0 {
			return nil, fmt.Errorf("receive-pack command %d carries a NUL; only the first may list capabilities", len(cl.Updates)+1)
		}
		u, err := parseUpdate(line, cl.ObjectFormat())
		if err != nil {
			return nil, fmt.Errorf("bad receive-pack command %d: %w", len(cl.Updates)+1, err)
		}
		if seen[u.Ref] {
			return nil, fmt.Errorf("receive-pack request updates %s more than once", u.Ref)
		}
		seen[u.Ref] = true
		cl.Updates = append(cl.Updates, u)
	}
}

func parseUpdate(line []byte, objectFormat string) (RefUpdate, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	fields := strings.Split(string(line), " ")
	if len(fields) != 3 {
		return RefUpdate{}, fmt.Errorf("want \"<old> <new> <ref>\", got %q", truncate(string(line)))
	}
	u := RefUpdate{Old: fields[0], New: fields[1], Ref: fields[2]}
	want := 40
	switch objectFormat {
	case "sha1":
	case "sha256":
		want = 64
	default:
		return RefUpdate{}, fmt.Errorf("unknown object-format %q", truncate(objectFormat))
	}
	for _, oid := range []string{u.Old, u.New} {
		if err := CheckOID(oid); err != nil {
			return RefUpdate{}, err
		}
		if len(oid) != want {
			return RefUpdate{}, fmt.Errorf("object name %s has %d digits but object-format %s needs %d", oid, len(oid), objectFormat, want)
		}
	}
	if u.IsCreate() && u.IsDelete() {
		return RefUpdate{}, fmt.Errorf("command for %s has zero old and new objects", truncate(u.Ref))
	}
	if err := CheckRefName(u.Ref); err != nil {
		return RefUpdate{}, err
	}
	return u, nil
}

// parseCapabilities splits git's space-separated capability list. git puts a space
// before the first one too, so empty fields are skipped.
func parseCapabilities(b []byte) ([]string, error) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	caps := []string{}
	for _, f := range strings.Split(string(b), " ") {
		if f == "" {
			continue
		}
		for i := 0; i < len(f); i++ {
			if f[i] <= ' ' || f[i] >= 0x7f {
				return nil, fmt.Errorf("capability %q contains byte %#02x; capabilities are printable ASCII", truncate(f), f[i])
			}
		}
		caps = append(caps, f)
	}
	return caps, nil
}
