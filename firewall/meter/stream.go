package meter

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Limits on what the meter holds while a response passes through. Beyond them the meter
// stops looking (and the call is marked incomplete); the bytes still flow unchanged.
const (
	maxEventBytes = 1 << 20 // one SSE event's data
	maxJSONBody   = 8 << 20 // a non-streaming JSON body
)

// Parser extracts usage from a response body fed to it in pieces of any size.
type Parser struct {
	sse      bool
	usage    Usage
	line     []byte // partial SSE line
	data     []byte // data lines of the current SSE event
	body     []byte // JSON body so far
	overflow bool
}

// NewParser returns a parser for a body of the given Content-Type: text/event-stream is
// read as SSE, anything else as one JSON document.
func NewParser(contentType string) *Parser {
	return &Parser{sse: strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/event-stream")}
}

// Write feeds body bytes; it never fails, so it can sit in an io.TeeReader.
func (p *Parser) Write(b []byte) (int, error) {
	if !p.sse {
		if len(p.body)+len(b) > maxJSONBody {
			p.overflow = true
		} else if !p.overflow {
			p.body = append(p.body, b...)
		}
		return len(b), nil
	}
	rest := b
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			p.appendLine(rest)
			break
		}
		p.appendLine(rest[:i])
		rest = rest[i+1:]
		p.endLine()
	}
	return len(b), nil
}

func (p *Parser) appendLine(b []byte) {
	if len(p.line)+len(b) > maxEventBytes {
		p.overflow = true
		p.line = p.line[:0]
		return
	}
	p.line = append(p.line, b...)
}

// endLine handles one complete SSE line (RFC-style: "data:" lines accumulate, a blank
// line dispatches the event; "event:", "id:", comments are ignored).
func (p *Parser) endLine() {
	line := bytes.TrimSuffix(p.line, []byte{'\r'})
	switch {
	case len(line) == 0:
		p.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		v := line[len("data:"):]
		if len(v) > 0 && v[0] == ' ' {
			v = v[1:]
		}
		if len(p.data)+len(v)+1 > maxEventBytes {
			p.overflow = true
		} else {
			if len(p.data) > 0 {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, v...)
		}
	}
	p.line = p.line[:0]
}

func (p *Parser) dispatch() {
	if len(p.data) > 0 {
		p.usage.apply(p.data)
	}
	p.data = p.data[:0]
}

// Usage returns what was read so far, finishing a last event or body that was not
// terminated (a stream cut off mid-way still yields its partial usage).
func (p *Parser) Usage() Usage {
	if p.sse {
		if len(p.line) > 0 {
			p.endLine()
		}
		p.dispatch()
	} else if !p.overflow && len(p.body) > 0 {
		p.usage.apply(p.body)
		p.body = nil
	}
	return p.usage
}

// Body wraps a response body: bytes pass through unchanged while the parser reads them;
// done is called once, with the usage, when the body ends, fails or is closed.
func Body(rc io.ReadCloser, contentType string, done func(Usage)) io.ReadCloser {
	return &meteredBody{rc: rc, p: NewParser(contentType), done: done}
}

type meteredBody struct {
	rc   io.ReadCloser
	p    *Parser
	done func(Usage)
	once sync.Once
}

func (m *meteredBody) Read(b []byte) (int, error) {
	n, err := m.rc.Read(b)
	if n > 0 {
		m.p.Write(b[:n])
	}
	if err != nil {
		m.finish()
	}
	return n, err
}

func (m *meteredBody) Close() error {
	err := m.rc.Close()
	m.finish()
	return err
}

func (m *meteredBody) finish() {
	m.once.Do(func() { m.done(m.p.Usage()) })
}
