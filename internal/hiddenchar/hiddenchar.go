// Package hiddenchar decides which characters a reader of a rendered page cannot see, or
// that change how the text around them is shown. It is the one rule for every place
// Bumper shows text someone else wrote: the hidden-text notice of the status comment
// (app/reveal) reports these characters, and the quoting of others' text as Markdown
// code (internal/mdcode, used by the status comment, the evidence bundle and the
// reviewer's verdict) writes them as [U+XXXX]. A character one of them showed raw and
// the other flagged would be text an approver or a reviewer could not see.
//
// A character is hidden when it is (Unicode's properties, as Go's unicode tables hold
// them):
//
//   - a tag character, anywhere in the Tags block (U+E0000–U+E007F): invisible copies of
//     ASCII that a model still reads ("ASCII smuggling");
//   - a bidirectional control (Bidi_Control: U+061C, U+200E, U+200F, U+202A–U+202E,
//     U+2066–U+2069), which reorders the text around it;
//   - default-ignorable: Other_Default_Ignorable_Code_Point (fillers such as U+115F,
//     U+3164 and U+FFA0, U+034F, U+17B4, and the unassigned code points Unicode
//     reserves as default-ignorable, which a browser draws as nothing today and a later
//     Unicode may assign), every format character (Cf: zero-width spaces and joiners,
//     U+00AD, U+FEFF, U+2060–U+2064, …) and every variation selector. This is
//     Default_Ignorable_Code_Point and more: the few format characters Unicode leaves
//     out of it so that they show when a font lacks them (prepended concatenation
//     marks, the interlinear annotation characters U+FFF9–U+FFFB, Egyptian hieroglyph
//     format controls) are counted too, since a reader cannot tell whether the font
//     shows them;
//   - a control character other than tab, line feed and carriage return (Cc), or a line
//     or paragraph separator (U+2028, U+2029);
//   - U+FFFC OBJECT REPLACEMENT CHARACTER, which stands for an embedded object that is
//     not there and which many fonts draw as nothing.
//
// Spaces are not hidden (they show as space), nor are private-use and unassigned code
// points outside the default-ignorable ranges (a browser draws a box for them).
package hiddenchar

import (
	"fmt"
	"strings"
	"unicode"
)

// Class says how a hidden character hides.
type Class uint8

// The classes of characters.
const (
	// Shown is a character the page shows.
	Shown Class = iota
	// Invisible is a character the page draws as nothing: default-ignorable, format
	// and control characters, separators.
	Invisible
	// Bidi is a bidirectional control, which reorders how the text around it shows.
	Bidi
	// Tag is a Unicode tag character (U+E0000–U+E007F).
	Tag
)

// Classify says whether r is hidden, and how.
func Classify(r rune) Class {
	switch {
	case r >= 0xE0000 && r <= 0xE007F:
		return Tag
	case unicode.Is(unicode.Bidi_Control, r):
		return Bidi
	case r == '\t', r == '\n', r == '\r':
		return Shown
	case r == 0xFFFC, r == 0x2028, r == 0x2029, unicode.IsControl(r),
		unicode.Is(unicode.Cf, r), unicode.Is(unicode.Variation_Selector, r),
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return Invisible
	}
	return Shown
}

// Is reports whether r is hidden.
func Is(r rune) bool { return Classify(r) != Shown }

// Mark writes every hidden character of s as "[U+XXXX]", so that a reader sees it, and
// says whether there was one. It is the one way hidden characters are shown, in quoted
// text and in the messages Bumper publishes alike.
func Mark(s string) (string, bool) {
	if strings.IndexFunc(s, Is) < 0 {
		return s, false
	}
	var b strings.Builder
	for _, r := range s {
		if Is(r) {
			fmt.Fprintf(&b, "[U+%04X]", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), true
}
