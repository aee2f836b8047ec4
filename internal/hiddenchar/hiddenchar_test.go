package hiddenchar

import (
	"testing"
	"unicode"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		r    rune
		want Class
	}{
		{"letter", 'a', Shown},
		{"space", ' ', Shown},
		{"tab", '\t', Shown},
		{"line feed", '\n', Shown},
		{"carriage return", '\r', Shown},
		{"no-break space", 0x00A0, Shown},
		{"braille blank", 0x2800, Shown},
		{"private use", 0xE000, Shown},
		{"unassigned outside the ignorable ranges", 0x0378, Shown},
		{"emoji", 0x1F600, Shown},
		{"NUL", 0x0000, Invisible},
		{"escape", 0x001B, Invisible},
		{"delete", 0x007F, Invisible},
		{"next line (C1)", 0x0085, Invisible},
		{"soft hyphen", 0x00AD, Invisible},
		{"combining grapheme joiner", 0x034F, Invisible},
		{"hangul choseong filler", 0x115F, Invisible},
		{"khmer inherent vowel", 0x17B4, Invisible},
		{"mongolian vowel separator", 0x180E, Invisible},
		{"mongolian free variation selector", 0x180B, Invisible},
		{"zero width space", 0x200B, Invisible},
		{"zero width joiner", 0x200D, Invisible},
		{"line separator", 0x2028, Invisible},
		{"paragraph separator", 0x2029, Invisible},
		{"word joiner", 0x2060, Invisible},
		{"invisible plus", 0x2064, Invisible},
		{"reserved default-ignorable U+2065", 0x2065, Invisible},
		{"hangul filler", 0x3164, Invisible},
		{"variation selector 16", 0xFE0F, Invisible},
		{"byte order mark", 0xFEFF, Invisible},
		{"halfwidth hangul filler", 0xFFA0, Invisible},
		{"reserved default-ignorable U+FFF0", 0xFFF0, Invisible},
		{"interlinear annotation anchor", 0xFFF9, Invisible},
		{"object replacement character", 0xFFFC, Invisible},
		{"arabic number sign (prepended concatenation mark)", 0x0600, Invisible},
		{"shorthand format letter overlap", 0x1BCA0, Invisible},
		{"musical symbol begin beam", 0x1D173, Invisible},
		{"variation selector 17", 0xE0100, Invisible},
		{"reserved default-ignorable U+E0080", 0xE0080, Invisible},
		{"reserved default-ignorable U+E0FFF", 0xE0FFF, Invisible},
		{"arabic letter mark", 0x061C, Bidi},
		{"left-to-right mark", 0x200E, Bidi},
		{"right-to-left mark", 0x200F, Bidi},
		{"right-to-left override", 0x202E, Bidi},
		{"first strong isolate", 0x2068, Bidi},
		{"pop directional isolate", 0x2069, Bidi},
		{"reserved tag U+E0000", 0xE0000, Tag},
		{"language tag", 0xE0001, Tag},
		{"tag A", 0xE0041, Tag},
		{"cancel tag", 0xE007F, Tag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.r); got != tc.want {
				t.Errorf("Classify(%U) = %d, want %d", tc.r, got, tc.want)
			}
			if Is(tc.r) != (tc.want != Shown) {
				t.Errorf("Is(%U) = %v", tc.r, Is(tc.r))
			}
		})
	}
}

// TestCoversDefaultIgnorable checks the rule against Unicode's own definition of
// Default_Ignorable_Code_Point (DerivedCoreProperties.txt), derived here from the
// properties it is made of: every such code point is hidden, and every bidirectional
// control is classed Bidi.
func TestCoversDefaultIgnorable(t *testing.T) {
	ignorable := func(r rune) bool {
		if !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) && !unicode.Is(unicode.Cf, r) &&
			!unicode.Is(unicode.Variation_Selector, r) {
			return false
		}
		return !unicode.Is(unicode.White_Space, r) && (r < 0xFFF9 || r > 0xFFFB) &&
			(r < 0x13430 || r > 0x1343F) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r)
	}
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if ignorable(r) {
			n++
			if !Is(r) {
				t.Errorf("%U is default-ignorable but not hidden", r)
			}
		}
		if unicode.Is(unicode.Bidi_Control, r) && Classify(r) != Bidi {
			t.Errorf("%U is a bidirectional control but classed %d", r, Classify(r))
		}
	}
	// Unicode 15 has 4,174 default-ignorable code points; far fewer means the tables
	// this test reads are not the ones it means.
	if n < 4000 {
		t.Fatalf("only %d default-ignorable code points found", n)
	}
}
