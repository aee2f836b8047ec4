package envbuild

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTailKeepsCharactersWhole: a failed setup's error quotes the end of its output,
// and that error becomes the run's reason, which serve takes only as valid UTF-8. A
// setup that prints anything but ASCII (a check mark, an ellipsis, a progress bar)
// must not leave the quoted tail starting in the middle of a character.
func TestTailKeepsCharactersWhole(t *testing.T) {
	for _, out := range []string{
		strings.Repeat("€", 2000),       // 3-byte characters, the cut two bytes into one
		"a" + strings.Repeat("é", 5000), // 2-byte characters, the cut inside one
		strings.Repeat("😀", 3000) + "a", // 4-byte characters, the cut inside one
		"\xff\xfe raw bytes\n",          // a script that prints what it likes
	} {
		tail := &tailBuffer{max: logTail}
		// Written as the VM's output arrives: in pieces of any size.
		for b := []byte(out); len(b) > 0; {
			n := min(len(b), 7)
			tail.Write(b[:n])
			b = b[n:]
		}
		got := tail.String()
		if !utf8.ValidString(got) {
			t.Errorf("the tail of %.20q… starts %q: not valid UTF-8", out, got[:min(len(got), 8)])
		}
		if len(got) > logTail {
			t.Errorf("the tail holds %d bytes, more than %d", len(got), logTail)
		}
	}
}
