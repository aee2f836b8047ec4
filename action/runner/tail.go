package runner

import (
	"strings"
	"unicode/utf8"
)

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	buf []byte
	max int
	cut bool
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf, t.cut = t.buf[len(t.buf)-t.max:], true
	}
	return len(p), nil
}

// String is what it kept, from the first whole line on.
func (t *tailWriter) String() string {
	s := string(t.buf)
	if _, rest, ok := strings.Cut(s, "\n"); ok && t.cut {
		return rest
	}
	return s
}

// lastLines is the last n non-empty lines of s on one line, valid UTF-8, within limit
// bytes; "no output" when there are none.
func lastLines(s string, n, limit int) string {
	var lines []string
	for _, l := range strings.Split(strings.ToValidUTF8(s, "\uFFFD"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "no output"
	}
	lines = lines[max(len(lines)-n, 0):]
	text := strings.Join(lines, " / ")
	if len(text) > limit {
		// The end holds the error: keep it, and say the start is gone.
		text = ellipsis + text[len(text)-limit+len(ellipsis):]
		for len(text) > len(ellipsis) && !utf8.RuneStart(text[len(ellipsis)]) {
			text = ellipsis + text[len(ellipsis)+1:]
		}
	}
	return text
}
