package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/lines"
	"github.com/bumperdev/bumper/internal/textcut"
)

// MaxStreamLineBytes bounds one line of an agent CLI's JSON event stream. A tool call
// that writes a whole file, or the answer of one that reads it, travels in a single
// line, so the bound is far above MaxEventLineBytes; a longer line counts as an unknown
// event and is skipped, and the stream is read on from the next line.
const MaxStreamLineBytes = 8 << 20

// maxReason bounds Result.Reason, in characters.
const maxReason = 500

// maxCalls bounds the tool calls a parser remembers to name their results: an agent
// cannot grow the parser's memory without end by calling tools.
const maxCalls = 4096

// jsonStream passes an agent CLI's stdout on to the transcript whole and reads it as
// JSON lines, one event each. What the line holds is the parser's business; the
// stream takes care of what no parser should see: over-long lines, blank lines, a
// trailing CR, bytes that are not UTF-8.
type jsonStream struct {
	out   io.Writer
	lines *lines.Writer
}

func newJSONStream(out io.Writer, sink *eventSink, what string, parse func([]byte)) *jsonStream {
	return &jsonStream{out: out, lines: &lines.Writer{Max: MaxStreamLineBytes, Line: func(b []byte, long bool) {
		switch {
		case long:
			sink.add(Event{Kind: EventUnknown, Summary: fmt.Sprintf("%s line longer than %d bytes, skipped", what, MaxStreamLineBytes)})
			return
		case len(bytes.TrimSpace(b)) == 0:
			return
		case !utf8.Valid(b):
			sink.add(Event{Kind: EventUnknown, Summary: what + " line is not valid UTF-8"})
			return
		}
		parse(bytes.TrimSuffix(b, []byte{'\r'}))
	}}}
}

// Write passes p to the transcript whole (a transcript that fails does not stop the
// agent), then reads its lines.
func (s *jsonStream) Write(p []byte) (int, error) {
	_, _ = s.out.Write(p)
	return s.lines.Write(p)
}

// flush reads a last line without a newline: a stream cut mid-line.
func (s *jsonStream) flush() { s.lines.Flush() }

// tailWriter passes a CLI's stderr on to the transcript and keeps its last non-blank
// line, which says why a CLI that sent no result stopped ("cannot be used with root").
type tailWriter struct {
	out   io.Writer
	lines *lines.Writer
	last  string
}

func newTailWriter(out io.Writer) *tailWriter {
	t := &tailWriter{out: out}
	t.lines = &lines.Writer{Max: 4 << 10, Line: func(b []byte, _ bool) {
		if s := oneLine(strings.ToValidUTF8(string(b), "\uFFFD"), maxReason/2); s != "" {
			t.last = s
		}
	}}
	return t
}

func (t *tailWriter) Write(p []byte) (int, error) {
	_, _ = t.out.Write(p)
	return t.lines.Write(p)
}

func (t *tailWriter) flush() { t.lines.Flush() }

// withStderr adds the CLI's last stderr line to a reason, when there is one.
func (t *tailWriter) withStderr(reason string) string {
	if t.last == "" {
		return reason
	}
	return reason + " (stderr: " + t.last + ")"
}

// oneLine makes s one line of at most n characters for display: control and format
// characters (new lines, terminal escapes, bidi overrides) become spaces, runs of
// spaces become one, and the end is cut with "…". s may be a whole tool output, so
// only its start is looked at.
func oneLine(s string, n int) string {
	s = textcut.Bytes(s, 4*n+4)
	return clean(strings.Join(strings.Fields(clean(s, len(s))), " "), n)
}

// microUSD converts a self-reported dollar figure; false when it is not a spend
// (negative, not a number, beyond the bound).
func microUSD(usd float64) (int64, bool) {
	v := math.Round(usd * 1e6)
	if math.IsNaN(v) || v < 0 || v > maxCostMicroUSD {
		return 0, false
	}
	return int64(v), true
}

// rawText renders a JSON value whose type a CLI may change between releases: a string
// as itself, anything else as its JSON.
func rawText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// callNames remembers which tool each call id named, within maxCalls.
type callNames map[string]string

func (c callNames) put(id, tool string) {
	if id != "" && len(c) < maxCalls {
		c[id] = tool
	}
}

// firstString is the first of keys that holds a non-empty string in a tool's input.
func firstString(input map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := input[k].(string); ok && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// inputSummary says in one line what a tool was asked: the command, the file, the
// pattern; the input as compact JSON when none of the usual fields is there.
func inputSummary(input json.RawMessage, preferred ...string) string {
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil {
		return oneLine(string(input), maxSummary)
	}
	s := firstString(m, preferred...)
	if s == "" {
		s = firstString(m, "command", "cmd", "file_path", "notebook_path", "path", "pattern", "url", "query", "subject", "description")
	}
	if s == "" {
		var b bytes.Buffer
		if json.Compact(&b, input) == nil {
			s = b.String()
		}
	}
	return oneLine(s, maxSummary)
}
