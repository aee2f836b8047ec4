package verify

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/internal/lines"
)

// The parts of an excerpt: the beginning (where the command or test says what it
// does) and the end (where the failure and the summary are), with a marker between
// that says how much was left out; together at most evidence.MaxExcerptBytes.
const (
	clipHead   = 2048
	clipMarker = 64 // the marker's room: "\n[… N bytes left out …]\n"
	clipTail   = evidence.MaxExcerptBytes - clipHead - clipMarker
	// clipHeld is the most one clip holds in memory (its tail grows to twice its bound
	// before it slides).
	clipHeld = clipHead + 2*clipTail
)

// clip keeps the beginning and the end of a text written in pieces, within
// evidence.MaxExcerptBytes, and counts what it left out.
type clip struct {
	head, tail []byte
	total      int64
}

func (c *clip) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := clipHead - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	switch {
	case len(p) == 0:
	case len(p) >= clipTail:
		c.tail = append(c.tail[:0], p[len(p)-clipTail:]...)
	default:
		c.tail = append(c.tail, p...)
		if len(c.tail) > 2*clipTail {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-clipTail:]...)
		}
	}
	return n, nil
}

// WriteString is Write for a string.
func (c *clip) WriteString(s string) { c.Write([]byte(s)) }

// String is the excerpt: valid UTF-8, at most evidence.MaxExcerptBytes.
func (c *clip) String() string {
	tail := c.tail
	if len(tail) > clipTail {
		tail = tail[len(tail)-clipTail:]
	}
	left := c.total - int64(len(c.head)) - int64(len(tail))
	if left == 0 {
		return evidence.Excerpt(string(c.head) + string(tail))
	}
	return evidence.Excerpt(strings.ToValidUTF8(string(c.head), "\uFFFD") +
		fmt.Sprintf("\n[… %d bytes left out …]\n", left) +
		strings.ToValidUTF8(string(tail), "\uFFFD"))
}

// maxLineBytes bounds a line of stdout read for test2json events. test2json splits
// long output lines, so its events stay far below this; a longer line is not one.
const maxLineBytes = 64 << 10

// commandOutput takes one command's stdout and stderr as they stream: it passes them
// to the live log, keeps the combined output's beginning and end for the excerpt,
// reads stdout's test2json events and captures a JUnit report printed on stdout.
// Stdout and stderr may be written from two goroutines at once.
type commandOutput struct {
	mu       sync.Mutex
	combined clip
	gotest   *goTestParser
	lines    *lines.Writer
	junit    *junitCapture
}

func newCommandOutput(maxBytes int64) *commandOutput {
	o := &commandOutput{gotest: newGoTestParser(maxBytes), junit: &junitCapture{max: maxBytes}}
	o.lines = &lines.Writer{Max: maxLineBytes, Line: func(b []byte, long bool) {
		if !long {
			o.gotest.line(b)
		}
	}}
	return o
}

// streams are the writers the command's output goes to.
func (o *commandOutput) streams(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	return &stream{o: o, live: stdout, stdout: true}, &stream{o: o, live: stderr}
}

// finish reads what is left after the command ended.
func (o *commandOutput) finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines.Flush()
	o.gotest.finish()
}

type stream struct {
	o      *commandOutput
	live   io.Writer
	stdout bool
}

// Write never fails: a live log that does not take the output must not stop the
// command. Stdout and stderr take turns, so the live log may be one writer.
func (s *stream) Write(p []byte) (int, error) {
	s.o.mu.Lock()
	defer s.o.mu.Unlock()
	if s.live != nil {
		_, _ = s.live.Write(p)
	}
	s.o.combined.Write(p)
	if s.stdout {
		s.o.lines.Write(p)
		s.o.junit.Write(p)
	}
	return len(p), nil
}

// junitMarker starts a JUnit report: <testsuites …> or <testsuite …>.
var junitMarker = []byte("<testsuite")

// junitCarry is how much of stdout before a write is kept to find a marker (and what
// precedes it) across writes.
const junitCarry = 128

// junitCapture keeps stdout from the first "<testsuite" that starts a report, up to
// max bytes. A report starts a line (after blanks) or follows an XML declaration
// ("?>"), as tools print one; a log line that only mentions "<testsuite" is not one.
type junitCapture struct {
	max     int64
	carry   []byte // the end of stdout so far, which may hold the start of a marker
	midLine bool   // carry does not begin at the start of stdout
	doc     []byte
	started bool
	over    bool // the report was longer than max
}

func (j *junitCapture) Write(p []byte) (int, error) {
	n := len(p)
	switch {
	case j.over:
	case j.started:
		j.add(p)
	default:
		buf := make([]byte, 0, len(j.carry)+len(p))
		buf = append(append(buf, j.carry...), p...)
		for i := 0; ; {
			k := bytes.Index(buf[i:], junitMarker)
			if k < 0 {
				break
			}
			at := i + k
			if j.startsReport(buf[:at]) {
				j.started, j.carry = true, nil
				j.add(buf[at:])
				return n, nil
			}
			i = at + 1
		}
		keep := min(len(buf), junitCarry)
		j.midLine = j.midLine || keep < len(buf)
		j.carry = append(j.carry[:0], buf[len(buf)-keep:]...)
	}
	return n, nil
}

// startsReport says whether a marker after before starts a report.
func (j *junitCapture) startsReport(before []byte) bool {
	t := bytes.TrimRight(before, " \t\r")
	if len(t) == 0 {
		return !j.midLine // only blanks since the start of stdout
	}
	return t[len(t)-1] == '\n' || bytes.HasSuffix(t, []byte("?>"))
}

func (j *junitCapture) add(p []byte) {
	if int64(len(j.doc)+len(p)) > j.max {
		j.over = true
		j.doc = nil
		return
	}
	j.doc = append(j.doc, p...)
}
