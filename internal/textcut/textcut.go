// Package textcut cuts text to a bound without splitting a character: the one way
// Bumper shortens what it shows, keeps or sends within a limit (an evidence field, a
// reason the App keeps, a check run's text, an error message quoting hostile input).
//
// A bound counts bytes (Bytes, Fit, Clip, Tail), characters (Runes, FitRunes) or lines
// (Lines). A cut falls on a character boundary: it moves back (forward, for Tail) to the
// edge of a valid UTF-8 character it would fall inside of, and never further, so the
// result is at most three bytes short of the bound. Bytes that are not UTF-8 split no
// character and are cut where the bound falls. Valid UTF-8 stays valid; a text within
// its bound comes back as it is, so every cut is idempotent (Clip's with a mark of one
// character too).
//
// A mark says where text was cut. Fit and FitRunes count it within the bound (for a
// limit the whole must keep, such as a schema's maxLength); Clip adds it after the bound
// (for a message that shows a hostile input's start, where only the input is bounded).
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis is the usual mark of a cut: one character, three bytes.
const Ellipsis = "…"

// Bytes keeps at most n bytes of s, ending on a character boundary.
func Bytes(s string, n int) string {
	switch {
	case n <= 0:
		return ""
	case len(s) <= n:
		return s
	}
	if start, _, ok := inside(s, n); ok {
		return s[:start]
	}
	return s[:n]
}

// Fit keeps s within n bytes, mark included: s itself when it fits, else its start
// (Bytes) followed by mark. When n is too small for the mark, s is cut without one.
func Fit(s string, n int, mark string) string {
	switch {
	case len(s) <= n:
		return s
	case n < len(mark):
		return Bytes(s, n)
	}
	return Bytes(s, n-len(mark)) + mark
}

// Clip keeps at most n bytes of s and adds mark after them when it cut: the result may
// be len(mark) bytes longer than n.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Bytes(s, n) + mark
}

// Tail keeps at most the last n bytes of s, starting on a character boundary: for the
// end of a command's output, where its error is.
func Tail(s string, n int) string {
	switch {
	case n <= 0:
		return ""
	case len(s) <= n:
		return s
	}
	i := len(s) - n
	if _, end, ok := inside(s, i); ok {
		return s[end:]
	}
	return s[i:]
}

// Runes keeps at most n characters of s and says how many it dropped. Each byte that
// is not UTF-8 counts as one character, as ranging over a string does.
func Runes(s string, n int) (string, int) {
	if len(s) <= n { // a character takes at least a byte
		return s, 0
	}
	kept := 0
	for i := range s {
		if kept == max(n, 0) {
			return s[:i], utf8.RuneCountInString(s[i:])
		}
		kept++
	}
	return s, 0
}

// FitRunes keeps s within n characters, mark included: s itself when it fits, else its
// start (Runes) followed by mark. When n is too small for the mark, s is cut without
// one.
func FitRunes(s string, n int, mark string) string {
	kept, dropped := Runes(s, n)
	if dropped == 0 {
		return s
	}
	m := utf8.RuneCountInString(mark)
	if n < m {
		return kept
	}
	kept, _ = Runes(s, n-m)
	return kept + mark
}

// Lines keeps at most n lines of s: all of s up to its n-th line break, which is
// dropped (as is everything after it).
func Lines(s string, n int) string {
	if n <= 0 {
		return ""
	}
	end := 0
	for range n {
		i := strings.IndexByte(s[end:], '\n')
		if i < 0 {
			return s
		}
		end += i + 1
	}
	return s[:end-1]
}

// inside reports the valid UTF-8 character of s that index i falls strictly inside
// of, by its start and end. A character is at most utf8.UTFMax bytes, so its start is
// at most three bytes before i.
func inside(s string, i int) (start, end int, ok bool) {
	for j := i - 1; j >= 0 && j > i-utf8.UTFMax; j-- {
		if !utf8.RuneStart(s[j]) {
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 || j+size <= i {
			return 0, 0, false
		}
		return j, j + size, true
	}
	return 0, 0, false
}
