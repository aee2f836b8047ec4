package pktline

import (
	"fmt"
	"strings"
)

// Side-band channels of git's multiplexed responses.
const (
	// BandData carries the protocol data itself (here: the report-status).
	BandData = 1
	// BandProgress carries messages the client prints as "remote: ...".
	BandProgress = 2
	// BandError carries a fatal error the client prints before giving up.
	BandError = 3
)

// RefStatus is one ref's outcome in a report-status.
type RefStatus struct {
	// Ref is the full ref name the client asked to update.
	Ref string
	// Reason is empty when the ref was updated ("ok <ref>"), otherwise why it was not
	// ("ng <ref> <reason>"); the client prints it as "! [remote rejected] ... (<reason>)".
	Reason string
}

// Report is a receive-pack response: the report-status the client asked for, and
// messages for the person pushing.
type Report struct {
	// UnpackError is empty for "unpack ok"; otherwise the client reports every ref as
	// failed with "remote unpack failed: <UnpackError>".
	UnpackError string
	// Refs has one entry per command of the request.
	Refs []RefStatus
	// Messages are lines the client prints as "remote: <line>". They only reach the
	// client when it asked for side-band or side-band-64k; otherwise they are dropped.
	Messages []string
}

// Encode renders the report as the body of a git-receive-pack response, in the form the
// client asked for in cl: wrapped in side-band-64k or side-band when requested,
// report-status (or report-status-v2, whose refusal lines are the same) when requested.
// A client that asked for neither gets only a flush-pkt, as git receive-pack sends.
func (rep Report) Encode(cl *CommandList) ([]byte, error) {
	var status []byte
	if cl.HasCapability("report-status") || cl.HasCapability("report-status-v2") {
		var err error
		unpack := "unpack ok\n"
		if rep.UnpackError != "" {
			unpack = "unpack " + oneLine(rep.UnpackError) + "\n"
		}
		if status, err = AppendString(status, unpack); err != nil {
			return nil, fmt.Errorf("failed to encode unpack status: %w", err)
		}
		for _, rs := range rep.Refs {
			if err := CheckRefName(rs.Ref); err != nil {
				return nil, fmt.Errorf("failed to encode status of a ref: %w", err)
			}
			line := "ok " + rs.Ref + "\n"
			if rs.Reason != "" {
				line = "ng " + rs.Ref + " " + oneLine(rs.Reason) + "\n"
			}
			if status, err = AppendString(status, line); err != nil {
				return nil, fmt.Errorf("failed to encode status of %s: %w", rs.Ref, err)
			}
		}
		status = AppendFlush(status)
	}
	var bandMax int
	switch {
	case cl.HasCapability("side-band-64k"):
		bandMax = MaxPayloadLen - 1
	case cl.HasCapability("side-band"):
		bandMax = 1000 - 4 - 1
	default:
		if status == nil {
			return AppendFlush(nil), nil
		}
		return status, nil
	}
	var out []byte
	for _, m := range rep.Messages {
		var err error
		if out, err = appendBand(out, BandProgress, []byte(oneLine(m)+"\n"), bandMax); err != nil {
			return nil, err
		}
	}
	out, err := appendBand(out, BandData, status, bandMax)
	if err != nil {
		return nil, err
	}
	return AppendFlush(out), nil
}

// appendBand splits data into side-band packets of at most max data bytes each.
func appendBand(dst []byte, band byte, data []byte, max int) ([]byte, error) {
	for len(data) > 0 {
		n := min(len(data), max)
		payload := append([]byte{band}, data[:n]...)
		var err error
		if dst, err = AppendPacket(dst, payload); err != nil {
			return nil, fmt.Errorf("failed to encode side-band %d packet: %w", band, err)
		}
		data = data[n:]
	}
	return dst, nil
}

// oneLine keeps a reason on one printable line: the client splits report-status on
// newlines, and control characters in a message would reach the pusher's terminal.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
	const max = 1000
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "")
	}
	return strings.TrimSpace(s)
}
