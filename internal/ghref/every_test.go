package ghref

import (
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestEveryRune puts every Unicode character that is ASCII, a digit, or folds to
// something else (its compatibility decomposition differs: fullwidth, small, circled,
// mathematical forms) where a reference, a mention or a URL needs one ('#', "GH-", '@'
// and their neighbours, a scheme's letters, "www."): nothing live is left.
func TestEveryRune(t *testing.T) {
	patterns := []func(string) string{
		func(c string) string { return "x " + c + "7" },
		func(c string) string { return "#" + c },
		func(c string) string { return "G" + c + "-1 g" + c + "1" },
		func(c string) string { return c + "@a @" + c + " a" + c + "@b" },
		func(c string) string { return c + "ttps:// h" + c + "tp:// htt" + c + "://" },
		func(c string) string { return c + "ww. w" + c + ". ww" + c },
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		c := string(r)
		if r >= utf8.RuneSelf && !unicode.IsDigit(r) && norm.NFKC.IsNormalString(c) {
			continue
		}
		for _, p := range patterns {
			in := p(c)
			if l := liveIn(Neutralize(in)); len(l) > 0 {
				t.Errorf("U+%04X: Neutralize(%q) = %q: live %q", r, in, Neutralize(in), l)
			}
		}
	}
}
