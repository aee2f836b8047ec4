package mdcode

import (
	"strings"
	"testing"

	"github.com/yuin/goldmark"
)

// render is what GitHub's CommonMark renderer would make of md (goldmark stands in).
func render(t *testing.T, md string) string {
	t.Helper()
	var b strings.Builder
	if err := goldmark.Convert([]byte(md), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSpanShowsTextAsIs(t *testing.T) {
	for _, s := range []string{"plain", "`", "``x``", " a ", "` leading", "trailing `", "<b>bold</b>", "@org/team", "a ``` b"} {
		t.Run(s, func(t *testing.T) {
			html := render(t, "x "+Span(s)+" y")
			if !strings.Contains(html, "<code>") || strings.Contains(html, "<b>") {
				t.Fatalf("%q rendered as %s", s, html)
			}
			if strings.Count(html, "<code>") != 1 {
				t.Fatalf("%q ended its own span: %s", s, html)
			}
		})
	}
	if Span("") != "(empty)" {
		t.Fatal("an empty span")
	}
}

func TestFenceEnclosesText(t *testing.T) {
	for _, s := range []string{"plain", "```\nnot a fence end\n```", "````````", "<!-- x -->\n# heading"} {
		t.Run(s, func(t *testing.T) {
			f := Fence(s)
			html := render(t, f+"\n"+s+"\n"+f+"\n\nafter")
			if strings.Count(html, "<pre>") != 1 || strings.Contains(html, "<h1>") || !strings.HasSuffix(strings.TrimSpace(html), "<p>after</p>") {
				t.Fatalf("%q escaped its fence %q: %s", s, f, html)
			}
		})
	}
}

func TestBreakMarkers(t *testing.T) {
	for _, s := range []string{"<!-- x -->", "<!--->", "<<!--!--", "--->", "<!-<!---->->", "plain"} {
		t.Run(s, func(t *testing.T) {
			out, broke := BreakMarkers(s)
			if strings.Contains(out, "<!--") || strings.Contains(out, "-->") {
				t.Fatalf("%q left a marker: %q", s, out)
			}
			if broke != (out != s) {
				t.Fatalf("%q: broke=%v but out=%q", s, broke, out)
			}
			if strings.ReplaceAll(out, " ", "") != strings.ReplaceAll(s, " ", "") {
				t.Fatalf("%q changed more than spaces: %q", s, out)
			}
		})
	}
}

func TestQuoterShowsHiddenCharacters(t *testing.T) {
	tests := []struct {
		name, in       string
		span, block    string // what the quote holds, without its delimiters
		hidden, marked bool
	}{
		{"plain", "plain text", "plain text", "plain text", false, false},
		{"bidi override and zero-width space", "approve\u202E\u200Bnow", "approve[U+202E][U+200B]now", "approve[U+202E][U+200B]now", true, false},
		{"tag characters", "a\U000E0041\U000E0042", "a[U+E0041][U+E0042]", "a[U+E0041][U+E0042]", true, false},
		{"reserved default-ignorable", "x\U000E0FFFy", "x[U+E0FFF]y", "x[U+E0FFF]y", true, false},
		{"comment markers", "<!-- x -->", "<! -- x -- >", "<! -- x -- >", false, true},
		{"line ends and tabs", "a\r\nb\rc\td", "a b c d", "a\nb\nc\td", false, false},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb", "a\uFFFDb", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q Quoter
			if got, want := q.Span(tc.in), Span(tc.span); got != want {
				t.Errorf("Span = %q, want %q", got, want)
			}
			if q.Hidden != tc.hidden || q.Marked != tc.marked {
				t.Errorf("Hidden, Marked = %v, %v; want %v, %v", q.Hidden, q.Marked, tc.hidden, tc.marked)
			}
			want := "```text\n" + tc.block + "\n```"
			if got := (&Quoter{}).Block(tc.in + "\n\n"); got != want {
				t.Errorf("Block = %q, want %q", got, want)
			}
		})
	}
}

func TestQuoterBlockEnclosesText(t *testing.T) {
	for _, s := range []string{"```\n# not a heading\n```", "~~~\n<script>x</script>", "````````"} {
		t.Run(s, func(t *testing.T) {
			html := render(t, (&Quoter{}).Block(s)+"\n\nafter")
			if strings.Count(html, "<pre>") != 1 || strings.Contains(html, "<h1>") || strings.Contains(html, "<script>") ||
				!strings.HasSuffix(strings.TrimSpace(html), "<p>after</p>") {
				t.Fatalf("%q escaped its block: %s", s, html)
			}
		})
	}
}
