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
