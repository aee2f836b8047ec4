// Package audit writes the firewall's decisions as hash-chained JSON lines and verifies
// such a log. Each line carries a sequence number and the SHA-256 of the previous line,
// so an edited, dropped, inserted or reordered line breaks the chain at a known place.
package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Genesis is the "previous hash" of the first line of every log.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Entry is one decision of the firewall.
type Entry struct {
	Time     time.Time
	Client   string // client address (the VM side)
	Kind     string // connect, http or a gateway name
	Method   string
	Target   string // host:port, or the gateway path without its query
	Addr     string // the address dialled (or refused), empty when none was resolved
	Allowed  bool
	Reason   string
	Status   int // HTTP status sent to the client; 0 when none
	BytesUp  int64
	BytesDn  int64
	Duration time.Duration
	CostUSD  float64 // model cost of this call (gateways that meter); 0 when none
	// Denied is the refusal's kind (internal/denied, the X-Bumper-Denied header); empty
	// when allowed. Written only when set, so lines of older logs hash as they did.
	Denied string
}

// Log appends entries to a file. It is safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	buf  []byte
	prev string
	seq  uint64
	err  error // sticky: once a write fails the log is broken for good

	failed atomic.Bool // err != nil, readable without the lock on the hot path
}

// fail records the first failure; the caller holds l.mu.
func (l *Log) fail(err error) error {
	if l.err == nil {
		l.err = err
		l.failed.Store(true)
	}
	return l.err
}

// Err returns the first write or flush failure, if any. The firewall stops serving when
// it is set, since decisions it cannot record must not be made.
func (l *Log) Err() error {
	if !l.failed.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Open opens (or creates) the log at path. An existing log is verified first and the
// chain continues from its last line; a broken log is refused so it is never extended.
func Open(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open audit log: %w", err)
	}
	head, err := Verify(f, "")
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to continue audit log %s (move it aside to start a new one): %w", path, err)
	}
	return &Log{f: f, w: bufio.NewWriterSize(f, 64<<10), prev: head.Hash, seq: head.Lines}, nil
}

// Write appends e. It is buffered: call Flush (or Close) to reach the file.
func (l *Log) Write(e *Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.w == nil {
		return l.fail(fmt.Errorf("failed to write audit entry: log is closed"))
	}
	l.seq++
	b := l.buf[:0]
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, l.seq, 10)
	b = append(b, `,"prev":"`...)
	b = append(b, l.prev...)
	b = append(b, `","time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendField(b, "client", e.Client)
	b = appendField(b, "kind", e.Kind)
	b = appendField(b, "method", e.Method)
	b = appendField(b, "target", e.Target)
	b = appendField(b, "addr", e.Addr)
	b = append(b, `,"allowed":`...)
	b = strconv.AppendBool(b, e.Allowed)
	b = appendField(b, "reason", e.Reason)
	if e.Denied != "" {
		b = appendField(b, "denied", e.Denied)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes_up":`...)
	b = strconv.AppendInt(b, e.BytesUp, 10)
	b = append(b, `,"bytes_down":`...)
	b = strconv.AppendInt(b, e.BytesDn, 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(e.Duration.Microseconds())/1000, 'f', 3, 64)
	if e.CostUSD != 0 {
		b = append(b, `,"cost_usd":`...)
		b = strconv.AppendFloat(b, e.CostUSD, 'f', 6, 64)
	}
	b = append(b, '}')
	sum := sha256.Sum256(b)
	l.prev = hex.EncodeToString(sum[:])
	b = append(b, '\n')
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		return l.fail(fmt.Errorf("failed to write audit entry: %w", err))
	}
	return nil
}

// Head is the state of a log after its last line.
type Head struct {
	Lines uint64 `json:"lines"`
	Hash  string `json:"hash"` // SHA-256 of the last line, Genesis for an empty log
}

// Head returns the current head (including buffered lines).
func (l *Log) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Head{Lines: l.seq, Hash: l.prev}
}

// Flush writes buffered lines to the file and syncs it.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return l.fail(fmt.Errorf("failed to flush audit log: %w", err))
	}
	if err := l.f.Sync(); err != nil {
		return l.fail(fmt.Errorf("failed to sync audit log: %w", err))
	}
	return nil
}

// Close flushes and closes the log.
func (l *Log) Close() error {
	err := l.Flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return err
	}
	l.w = nil
	if cerr := l.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("failed to close audit log: %w", cerr)
	}
	return err
}

func appendField(b []byte, key, val string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, `":`...)
	return appendJSONString(b, val)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as a JSON string; invalid UTF-8 becomes U+FFFD so every
// line stays valid JSON whatever a client sent.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// readLines splits r into lines without their newline; a missing final newline is an
// error (the writer always ends lines), so a torn last write is reported.
func readLines(r io.Reader, fn func(n uint64, line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var n uint64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			n++
			if line[len(line)-1] != '\n' {
				return &VerifyError{n, "no newline at end of the line (a torn write, or the line was edited)"}
			}
			if err := fn(n, bytes.TrimSuffix(line, []byte{'\n'})); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read audit log: %w", err)
		}
	}
}
