// Package http1 reads and writes the HTTP/1.x the firewall's proxy speaks: request and
// response heads, chunked and sized bodies. The parser is deliberately strict (anything
// a lenient server and a strict one could read differently is refused) and allocation
// free once its buffers are warm: a Head is reused for every request on a connection.
// It decides only what is well-formed HTTP/1; which well-formed requests the proxy
// serves is the firewall's business.
package http1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/bumperdev/bumper/internal/textcut"
)

// Header is one header line; Name and Value point into Head.Raw and are valid until the
// next head is read into the same Head.
type Header struct {
	Name, Value []byte
}

// Head is a parsed HTTP/1.x request or response head.
type Head struct {
	// Raw is the head as received, empty lines before a request excepted; what the
	// firewall replays when it hands a connection to the gateways.
	Raw []byte
	// First is the first line's three parts: method, target and version of a request;
	// version, status code and reason of a response.
	First   [3][]byte
	Headers []Header

	ContentLength  int64 // -1 when absent
	Chunked        bool  // Transfer-Encoding: chunked
	Close          bool  // Connection: close, or HTTP/1.0 without keep-alive
	HostCount      int   // how many Host headers
	Host           []byte
	Upgrade        bool // Connection lists upgrade
	HTTP10         bool
	ExpectContinue bool
}

// Method is a request's method.
func (h *Head) Method() []byte { return h.First[0] }

// Target is a request's target, as sent.
func (h *Head) Target() []byte { return h.First[1] }

// StatusCode is a response's status code, 0 when it is not three digits.
func (h *Head) StatusCode() int {
	b := h.First[1]
	if len(b) != 3 {
		return 0
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// HasBody says a request head announces a body.
func (h *Head) HasBody() bool { return h.Chunked || h.ContentLength > 0 }

// HeadError is a malformed head; its text is meant for the client, in a 400.
type HeadError struct{ msg string }

func (e *HeadError) Error() string { return e.msg }

func badHead(format string, args ...any) error { return &HeadError{fmt.Sprintf(format, args...)} }

// ErrHeadTooLarge is the HeadError for a head over the size limit.
var ErrHeadTooLarge error = &HeadError{"request head larger than the configured limit"}

// MaxHeaderLines is how many header lines a head may hold, besides its first line and
// the blank line that ends it; one more is refused.
const MaxHeaderLines = 62

// ReadRequest reads one request head of at most max bytes into h. It returns io.EOF
// when the connection ended cleanly before a request, a *HeadError when the head is
// malformed, and another error when reading failed.
func (h *Head) ReadRequest(br *bufio.Reader, max int) error { return h.read(br, max, true) }

// ReadResponse reads one response head of at most max bytes into h, with the errors of
// ReadRequest.
func (h *Head) ReadResponse(br *bufio.Reader, max int) error { return h.read(br, max, false) }

func (h *Head) read(br *bufio.Reader, max int, request bool) error {
	h.Raw = h.Raw[:0]
	h.Headers = h.Headers[:0]
	h.ContentLength = -1
	h.Chunked, h.Close, h.Upgrade, h.HTTP10, h.ExpectContinue = false, false, false, false, false
	h.HostCount = 0
	h.Host = nil
	var lineStarts [MaxHeaderLines + 2]int
	lines := lineStarts[:0]
	for {
		line, err := br.ReadSlice('\n')
		if len(h.Raw)+len(line) > max || errors.Is(err, bufio.ErrBufferFull) {
			return ErrHeadTooLarge
		}
		if err != nil {
			if len(h.Raw) == 0 && len(line) == 0 && err == io.EOF {
				return io.EOF
			}
			return fmt.Errorf("failed to read head: %w", err)
		}
		if len(line) == 1 || len(line) >= 2 && line[len(line)-2] != '\r' {
			return badHead("line not ended by CRLF (a bare LF is refused)")
		}
		blank := len(line) == 2
		if blank && len(h.Raw) == 0 && request {
			continue // RFC 9112 2.2: a server should ignore empty lines before a request
		}
		// lines holds the first line and the header lines so far: one more header
		// line than MaxHeaderLines is refused.
		if len(lines) == 1+MaxHeaderLines && !blank {
			return badHead("more than %d header lines", MaxHeaderLines)
		}
		lines = append(lines, len(h.Raw))
		h.Raw = append(h.Raw, line...)
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

func (h *Head) parse(lines []int, request bool) error {
	end := func(i int) int {
		if i+1 < len(lines) {
			return lines[i+1]
		}
		return len(h.Raw)
	}
	first, err := trimEOL(h.Raw[:end(0)])
	if err != nil {
		return err
	}
	if err := h.parseFirst(first, request); err != nil {
		return err
	}
	for i := 1; i < len(lines)-1; i++ {
		line, err := trimEOL(h.Raw[lines[i]:end(i)])
		if err != nil {
			return err
		}
		if err := h.parseHeader(line); err != nil {
			return err
		}
	}
	if h.Chunked && h.ContentLength >= 0 {
		return badHead("both Content-Length and Transfer-Encoding are set (request smuggling is refused)")
	}
	return nil
}

func (h *Head) parseFirst(line []byte, request bool) error {
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
		h.First = [3][]byte{line[:sp1], rest[:sp2], rest[sp2+1:]}
		for _, c := range h.First[0] {
			if !isTokenChar(c) {
				return badHead("method contains a byte that is not allowed")
			}
		}
		for _, c := range h.First[1] {
			if c <= ' ' || c == 0x7f {
				return badHead("request target contains a space or control character")
			}
		}
		return h.parseVersion(h.First[2])
	}
	// Response: "HTTP/1.1 200 OK" (the reason may be empty or contain spaces).
	if sp2 < 0 {
		h.First = [3][]byte{line[:sp1], rest, nil}
	} else {
		h.First = [3][]byte{line[:sp1], rest[:sp2], rest[sp2+1:]}
	}
	if len(h.First[1]) != 3 {
		return badHead("malformed status line")
	}
	return h.parseVersion(h.First[0])
}

func (h *Head) parseVersion(v []byte) error {
	switch string(v) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		h.HTTP10, h.Close = true, true
	default:
		return badHead("unsupported protocol version %q (HTTP/1.0 or HTTP/1.1 only)", Clip(v))
	}
	return nil
}

func (h *Head) parseHeader(line []byte) error {
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
			return badHead("header name %q contains a byte that is not allowed", Clip(name))
		}
	}
	value := bytes.Trim(line[colon+1:], " \t")
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return badHead("header %s contains a control character", name)
		}
	}
	h.Headers = append(h.Headers, Header{name, value})
	switch {
	case EqFold(name, "content-length"):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || len(value) == 0 || value[0] == '+' {
			return badHead("invalid Content-Length %q", Clip(value))
		}
		if h.ContentLength >= 0 && h.ContentLength != n {
			return badHead("conflicting Content-Length headers")
		}
		h.ContentLength = n
	case EqFold(name, "transfer-encoding"):
		if h.Chunked || !EqFold(value, "chunked") {
			return badHead("unsupported Transfer-Encoding %q (only a single \"chunked\" is accepted)", Clip(value))
		}
		h.Chunked = true
	case EqFold(name, "host"):
		h.HostCount++
		h.Host = value
	case EqFold(name, "expect"):
		h.ExpectContinue = EqFold(value, "100-continue")
	case EqFold(name, "connection"):
		if containsToken(value, "close") {
			h.Close = true
		} else if h.HTTP10 && containsToken(value, "keep-alive") {
			h.Close = false
		}
		if containsToken(value, "upgrade") {
			h.Upgrade = true
		}
	}
	return nil
}

// Get returns the first value of header name (lower case).
func (h *Head) Get(name string) ([]byte, bool) {
	for _, hd := range h.Headers {
		if EqFold(hd.Name, name) {
			return hd.Value, true
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

// EqFold compares an ASCII token with a lower-case constant, ignoring case.
func EqFold(b []byte, lower string) bool {
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
		if EqFold(bytes.Trim(part, " \t"), tok) {
			return true
		}
	}
	return false
}

// Clip shortens client-sent bytes for an error message or a log line.
func Clip(b []byte) string {
	// Only the bytes that may be kept are copied: b can be as long as a request head.
	return textcut.Clip(string(b[:min(len(b), 65)]), 64, "...")
}
