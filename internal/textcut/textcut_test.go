package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCuts(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"Bytes: short enough", Bytes("abc", 3), "abc"},
		{"Bytes: cut", Bytes("abcdef", 4), "abcd"},
		{"Bytes: a character not split", Bytes("a€z", 2), "a"},
		{"Bytes: a character kept whole", Bytes("a€z", 4), "a€"},
		{"Bytes: a 4-byte character not split", Bytes("😀😀", 7), "😀"},
		{"Bytes: nothing", Bytes("abc", 0), ""},
		{"Bytes: a negative bound", Bytes("abc", -1), ""},
		{"Bytes: invalid bytes cut where the bound falls", Bytes("ab\x80\x80\x80\x80\x80", 5), "ab\x80\x80\x80"},
		{"Bytes: a stray continuation byte splits nothing", Bytes("ab\x80c", 3), "ab\x80"},
		{"Bytes: an invalid lead byte splits nothing", Bytes("a\xe2bc", 2), "a\xe2"},

		// Fit counts the mark within the bound (the runner's evidence lines, TestCut
		// there before: the reason of TestRunInGoEnvironment's first failure was a
		// detail of 1001 characters that made the evidence invalid).
		{"Fit: short enough", Fit("abc", 3, Ellipsis), "abc"},
		{"Fit: cut", Fit("abcdef", 5, Ellipsis), "ab…"},
		{"Fit: a character kept whole", Fit("aé€z", 6, Ellipsis), "aé…"},
		{"Fit: a character not split", Fit("a€€z", 6, Ellipsis), "a…"},
		{"Fit: only the mark", Fit("abcdef", 3, Ellipsis), "…"},
		{"Fit: no room for the mark", Fit("abcdef", 2, Ellipsis), "ab"},
		{"Fit: a mark of dots", Fit("abcdef", 5, "..."), "ab..."},

		// Clip adds the mark after the bound (messages quoting hostile input).
		{"Clip: short enough", Clip("abc", 3, Ellipsis), "abc"},
		{"Clip: cut", Clip("abcdef", 3, Ellipsis), "abc…"},
		{"Clip: one byte over", Clip("abcd", 3, "..."), "abc..."},
		{"Clip: a character not split", Clip("ab€", 3, Ellipsis), "ab…"},

		{"Tail: short enough", Tail("abc", 3), "abc"},
		{"Tail: cut", Tail("abcdef", 2), "ef"},
		{"Tail: a character not split", Tail("a€z", 3), "z"},
		{"Tail: a character kept whole", Tail("a€z", 4), "€z"},
		{"Tail: invalid bytes cut where the bound falls", Tail("\x80\x80\x80\x80\x80ab", 5), "\x80\x80\x80ab"},
		{"Tail: nothing", Tail("abc", 0), ""},

		{"Runes: short enough", first(Runes("aé€", 3)), "aé€"},
		{"Runes: cut", first(Runes("aé€😀", 2)), "aé"},
		{"Runes: an invalid byte is one character", first(Runes("a\xffbc", 2)), "a\xff"},
		{"Runes: nothing", first(Runes("abc", 0)), ""},

		{"FitRunes: short enough", FitRunes("aé€", 3, Ellipsis), "aé€"},
		{"FitRunes: cut", FitRunes("aé€😀", 3, Ellipsis), "aé…"},
		{"FitRunes: only the mark", FitRunes("aé€😀", 1, Ellipsis), "…"},
		{"FitRunes: no room for the mark", FitRunes("aé€😀", 2, "..."), "aé"},

		{"Lines: fewer lines", Lines("a\nb", 2), "a\nb"},
		{"Lines: cut before the n-th line break", Lines("a\nb\nc\n", 2), "a\nb"},
		{"Lines: a trailing line break dropped", Lines("a\nb\n", 2), "a\nb"},
		{"Lines: one", Lines("a\nb", 1), "a"},
		{"Lines: empty lines count", Lines("\n\n\nx", 2), "\n"},
		{"Lines: none", Lines("a\nb", 0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if _, dropped := Runes("aé€😀x", 2); dropped != 3 {
		t.Errorf("Runes dropped %d characters, want 3", dropped)
	}
	long := strings.Repeat("é", 2000)
	if got := Fit(long, 1000, Ellipsis); len(got) > 1000 || utf8.RuneCountInString(got) > 1000 || !utf8.ValidString(got) {
		t.Errorf("a line fit to 1000 bytes is %d bytes", len(got))
	}
}

func first(s string, _ int) string { return s }

// FuzzCuts holds every cut to its contract on any bytes: within its bound, a prefix (a
// suffix for Tail) of the text, never inside a valid character, valid UTF-8 kept valid,
// the text itself when it fits, idempotent, and never more than three bytes short.
func FuzzCuts(f *testing.F) {
	for _, s := range []string{"", "abc", "aé€😀z", "a€€z", "\xff\xfe raw", "ab\x80\x80\x80\x80c", "l1\nl2\n\nl4", "\xe2\x82\xe2\x82\xac"} {
		for _, n := range []int{-1, 0, 1, 2, 3, 5, 8} {
			f.Add(s, n, uint8(n&3))
		}
	}
	marks := []string{"", Ellipsis, "...", "[cut]"}
	f.Fuzz(func(t *testing.T, s string, n int, markIndex uint8) {
		n %= len(s) + 8
		mark := marks[int(markIndex)%len(marks)]
		valid := utf8.ValidString(s)

		// Bytes and Fit.
		b := Bytes(s, n)
		wantPrefix(t, "Bytes", s, b)
		if len(b) > max(n, 0) || Bytes(b, n) != b || (len(s) <= n) != (b == s) && n >= 0 {
			t.Fatalf("Bytes(%q, %d) = %q: over the bound, not idempotent or cut within it", s, n, b)
		}
		if len(s) > n && n > 0 && len(b) < n-(utf8.UTFMax-1) {
			t.Fatalf("Bytes(%q, %d) = %q: more than three bytes short", s, n, b)
		}
		wantWhole(t, "Bytes", s, len(b), valid, b)
		if n >= 0 {
			fit := Fit(s, n, mark)
			if len(fit) > n || Fit(fit, n, mark) != fit {
				t.Fatalf("Fit(%q, %d, %q) = %q: over the bound or not idempotent", s, n, mark, fit)
			}
			if len(s) > n && n >= len(mark) {
				kept, ok := strings.CutSuffix(fit, mark)
				if !ok || kept != Bytes(s, n-len(mark)) {
					t.Fatalf("Fit(%q, %d, %q) = %q: not the text's start and the mark", s, n, mark, fit)
				}
			}
			if valid && !utf8.ValidString(fit) && utf8.ValidString(mark) {
				t.Fatalf("Fit(%q, %d, %q) = %q: not valid UTF-8", s, n, mark, fit)
			}
		}

		// Clip: the bound counts the text, not the mark.
		clip := Clip(s, n, mark)
		if len(s) <= n && clip != s || len(s) > n && clip != Bytes(s, n)+mark || len(clip) > max(n, 0)+len(mark) && len(s) > n {
			t.Fatalf("Clip(%q, %d, %q) = %q", s, n, mark, clip)
		}
		if utf8.RuneCountInString(mark) == 1 && Clip(clip, n, mark) != clip {
			t.Fatalf("Clip(%q, %d, %q) = %q: not idempotent", s, n, mark, clip)
		}

		// Tail.
		tail := Tail(s, n)
		if !strings.HasSuffix(s, tail) || len(tail) > max(n, 0) || Tail(tail, n) != tail {
			t.Fatalf("Tail(%q, %d) = %q: not a suffix within the bound, or not idempotent", s, n, tail)
		}
		if len(s) > n && n > 0 && len(tail) < n-(utf8.UTFMax-1) {
			t.Fatalf("Tail(%q, %d) = %q: more than three bytes short", s, n, tail)
		}
		wantWhole(t, "Tail", s, len(s)-len(tail), valid, tail)

		// Runes and FitRunes.
		r, dropped := Runes(s, n)
		wantPrefix(t, "Runes", s, r)
		count := utf8.RuneCountInString(r)
		if count > max(n, 0) || dropped != utf8.RuneCountInString(s)-count || first(Runes(r, n)) != r {
			t.Fatalf("Runes(%q, %d) = %q, %d: over the bound, miscounted or not idempotent", s, n, r, dropped)
		}
		if dropped > 0 && count != max(n, 0) {
			t.Fatalf("Runes(%q, %d) = %q: cut short", s, n, r)
		}
		wantWhole(t, "Runes", s, len(r), valid, r)
		if n >= 0 {
			fr := FitRunes(s, n, mark)
			if utf8.RuneCountInString(fr) > n || FitRunes(fr, n, mark) != fr {
				t.Fatalf("FitRunes(%q, %d, %q) = %q: over the bound or not idempotent", s, n, mark, fr)
			}
		}

		// Lines.
		l := Lines(s, n)
		wantPrefix(t, "Lines", s, l)
		if strings.Count(l, "\n") > max(n-1, 0) || Lines(l, n) != l || n > 0 && strings.Count(s, "\n") < n && l != s {
			t.Fatalf("Lines(%q, %d) = %q", s, n, l)
		}
		wantWhole(t, "Lines", s, len(l), valid, l)
	})
}

func wantPrefix(t *testing.T, name, s, got string) {
	t.Helper()
	if !strings.HasPrefix(s, got) {
		t.Fatalf("%s of %q = %q: not its start", name, s, got)
	}
}

// wantWhole fails when index i of s falls inside a valid UTF-8 character (as decoding s
// from its start finds them), or when a valid s gave an invalid got.
func wantWhole(t *testing.T, name, s string, i int, valid bool, got string) {
	t.Helper()
	for p := 0; p < len(s); {
		r, size := utf8.DecodeRuneInString(s[p:])
		if !(r == utf8.RuneError && size == 1) && p < i && i < p+size {
			t.Fatalf("%s of %q = %q: cut inside %q", name, s, got, r)
		}
		p += size
	}
	if valid && !utf8.ValidString(got) {
		t.Fatalf("%s of %q = %q: not valid UTF-8", name, s, got)
	}
}
