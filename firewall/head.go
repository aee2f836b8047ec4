package firewall

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// header is one header line; name and value point into head.raw and are valid until
// the next head is read on the same connection.
type header struct {
	name, value []byte
}

// head is a parsed HTTP/1.x request or response head. The parser is deliberately strict:
// anything a lenient server and a strict one could read differently is refused.
type head struct {
	raw     []byte // the bytes as received, for hand-off to the gateway server
	first   [3][]byte
	headers []header

	contentLength  int64 // -1 when absent
	chunked        bool
	close          bool // Connection: close, or HTTP/1.0 without keep-alive
	hostCount      int
	host           []byte
	upgrade        bool
	http10         bool
	expectContinue bool
}

// errHead is a malformed head; its text goes to the client in a 400.
type errHead struct{ msg string }

func (e *errHead) Error() string { return e.msg }

func badHead(format string, args ...any) error { return &errHead{fmt.Sprintf(format, args...)} }

var errHeadTooLarge = &errHead{"request head larger than the configured limit"}

// readHead reads one head (request or response) of at most max bytes.
func (h *head) read(br *bufio.Reader, max int, request bool) error {
	h.raw = h.raw[:0]
	h.headers = h.headers[:0]
	h.contentLength = -1
	h.chunked, h.close, h.upgrade, h.http10, h.expectContinue = false, false, false, false, false
	h.hostCount = 0
	h.host = nil
	var lineStarts [64]int
	lines := lineStarts[:0]
	for {
		line, err := br.ReadSlice('\n')
		if len(h.raw)+len(line) > max || errors.Is(err, bufio.ErrBufferFull) {
			return errHeadTooLarge
		}
		if err != nil {
			if len(h.raw) == 0 && len(line) == 0 && err == io.EOF {
				return io.EOF
			}
			return fmt.Errorf("failed to read head: %w", err)
		}
		if len(line) == 1 || len(line) >= 2 && line[len(line)-2] != '\r' {
			return badHead("line not ended by CRLF (a bare LF is refused)")
		}
		blank := len(line) == 2
		if blank && len(h.raw) == 0 && request {
			continue // RFC 9112 2.2: a server should ignore empty lines before a request
		}
		if len(lines) == cap(lineStarts) && !blank {
			return badHead("more than %d header lines", cap(lineStarts)-2)
		}
		lines = append(lines, len(h.raw))
		h.raw = append(h.raw, line...)
		if blank {
			break
		}
	}
	return h.parse(lines, request)
}

func trimEOL(b []byte) ([]byte, error) {
	b = b[:len(b)-1]
	if len(b) == 0 || b[len(b)-1] != '\r' {
		return nil, badHead("line not ended by CRLF")
	}
	return b[:len(b)-1], nil
}

func (h *head) parse(lines []int, request bool) error {
	end := func(i int) int {
		if i+1 < len(lines) {
			return lines[i+1]
		}
		return len(h.raw)
	}
	first, err := trimEOL(h.raw[:end(0)])
	if err != nil {
		return err
	}
	if err := h.parseFirst(first, request); err != nil {
		return err
	}
	for i := 1; i < len(lines)-1; i++ {
		line, err := trimEOL(h.raw[lines[i]:end(i)])
		if err != nil {
			return err
		}
		if err := h.parseHeader(line); err != nil {
			return err
		}
	}
	if h.chunked && h.contentLength >= 0 {
		return badHead("both Content-Length and Transfer-Encoding are set (request smuggling is refused)")
	}
	return nil
}

func (h *head) parseFirst(line []byte, request bool) error {
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return badHead("malformed first line")
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if request {
		if sp2 <= 0 {
			return badHead("malformed request line (want METHOD TARGET HTTP/1.1)")
		}
		h.first = [3][]byte{line[:sp1], rest[:sp2], rest[sp2+1:]}
		for _, c := range h.first[0] {
			if !isTokenChar(c) {
				return badHead("method contains a byte that is not allowed")
			}
		}
		for _, c := range h.first[1] {
			if c <= ' ' || c == 0x7f {
				return badHead("request target contains a space or control character")
			}
		}
		return h.parseVersion(h.first[2])
	}
	// Response: "HTTP/1.1 200 OK" (the reason may be empty or contain spaces).
	if sp2 < 0 {
		h.first = [3][]byte{line[:sp1], rest, nil}
	} else {
		h.first = [3][]byte{line[:sp1], rest[:sp2], rest[sp2+1:]}
	}
	if len(h.first[1]) != 3 {
		return badHead("malformed status line")
	}
	return h.parseVersion(h.first[0])
}

func (h *head) parseVersion(v []byte) error {
	switch string(v) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		h.http10, h.close = true, true
	default:
		return badHead("unsupported protocol version %q (HTTP/1.0 or HTTP/1.1 only)", clipBytes(v))
	}
	return nil
}

func (h *head) parseHeader(line []byte) error {
	if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		return badHead("obsolete header line folding is refused")
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return badHead("malformed header line")
	}
	name := line[:colon]
	for _, c := range name {
		if !isTokenChar(c) {
			return badHead("header name %q contains a byte that is not allowed", clipBytes(name))
		}
	}
	value := bytes.Trim(line[colon+1:], " \t")
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return badHead("header %s contains a control character", name)
		}
	}
	h.headers = append(h.headers, header{name, value})
	switch {
	case eqFold(name, "content-length"):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || len(value) == 0 || value[0] == '+' {
			return badHead("invalid Content-Length %q", clipBytes(value))
		}
		if h.contentLength >= 0 && h.contentLength != n {
			return badHead("conflicting Content-Length headers")
		}
		h.contentLength = n
	case eqFold(name, "transfer-encoding"):
		if h.chunked || !eqFold(value, "chunked") {
			return badHead("unsupported Transfer-Encoding %q (only a single \"chunked\" is accepted)", clipBytes(value))
		}
		h.chunked = true
	case eqFold(name, "host"):
		h.hostCount++
		h.host = value
	case eqFold(name, "expect"):
		h.expectContinue = eqFold(value, "100-continue")
	case eqFold(name, "connection"):
		if containsToken(value, "close") {
			h.close = true
		} else if h.http10 && containsToken(value, "keep-alive") {
			h.close = false
		}
		if containsToken(value, "upgrade") {
			h.upgrade = true
		}
	}
	return nil
}

// get returns the first value of header name.
func (h *head) get(name string) ([]byte, bool) {
	for _, hd := range h.headers {
		if eqFold(hd.name, name) {
			return hd.value, true
		}
	}
	return nil, false
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// eqFold compares an ASCII header token with a lower-case constant.
func eqFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// containsToken reports whether a comma-separated header value lists tok.
func containsToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var part []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			part, v = v[:i], v[i+1:]
		} else {
			part, v = v, nil
		}
		if eqFold(bytes.Trim(part, " \t"), tok) {
			return true
		}
	}
	return false
}

// isHopByHop reports whether name is a header a proxy must not forward (RFC 9110 7.6.1),
// proxy headers included.
func isHopByHop(name []byte) bool {
	switch len(name) {
	case 2:
		return eqFold(name, "te")
	case 7:
		return eqFold(name, "trailer") || eqFold(name, "upgrade")
	case 10:
		return eqFold(name, "connection") || eqFold(name, "keep-alive")
	case 16:
		return eqFold(name, "proxy-connection")
	case 18:
		return eqFold(name, "proxy-authenticate")
	case 19:
		return eqFold(name, "proxy-authorization")
	}
	return false
}

func clipBytes(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
