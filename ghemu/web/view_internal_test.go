package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/bumperdev/bumper/internal/ghhtml"
)

func TestParseDiffClassesAndLineNumbers(t *testing.T) {
	raw := "diff --git a/a.txt b/a.txt\n" +
		"index 1111111..2222222 100644\n" +
		"--- a/a.txt\n" +
		"+++ b/a.txt\n" +
		"@@ -1,3 +1,3 @@ func f() {\n" +
		" one\n" +
		"-two\n" +
		"+deux\n" +
		" three\n" +
		"\\ No newline at end of file\n" +
		"diff --git a/new file.txt b/new file.txt\n" +
		"new file mode 100644\n" +
		"index 0000000..3333333\n" +
		"--- /dev/null\n" +
		"+++ b/new file.txt\n" +
		"@@ -0,0 +1 @@\n" +
		"+--- not a header\n" +
		"diff --git a/gone.txt b/gone.txt\n" +
		"deleted file mode 100644\n" +
		"--- a/gone.txt\n" +
		"+++ /dev/null\n" +
		"@@ -1 +0,0 @@\n" +
		"-bye\n" +
		"diff --git a/old.go b/moved.go\n" +
		"similarity index 100%\n" +
		"rename from old.go\n" +
		"rename to moved.go\n" +
		"diff --git a/logo.png b/logo.png\n" +
		"index 4444444..5555555 100644\n" +
		"Binary files a/logo.png and b/logo.png differ\n" +
		"diff --git a/run.sh b/run.sh\n" +
		"old mode 100644\n" +
		"new mode 100755\n" +
		"diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\n" +
		"new file mode 100644\n" +
		"--- /dev/null\n" +
		"+++ \"b/caf\\303\\251.txt\"\n" +
		"@@ -0,0 +1 @@\n" +
		"+<script>x</script>\n"
	d := parseDiff([]byte(raw))
	if len(d.Files) != 7 {
		t.Fatalf("files = %d, want 7", len(d.Files))
	}
	tests := []struct {
		name          string
		file          *diffFile
		path, status  string
		add, del      int
		binary        bool
		kinds         string
		firstNumbered diffLine
	}{
		{"modified", d.Files[0], "a.txt", "modified", 1, 1, false, "hunk ctx del add ctx note", diffLine{Kind: "ctx", Old: 1, New: 1, Text: "one"}},
		{"added, with a line that looks like a header", d.Files[1], "new file.txt", "added", 1, 0, false, "hunk add", diffLine{Kind: "add", New: 1, Text: "--- not a header"}},
		{"deleted", d.Files[2], "gone.txt", "deleted", 0, 1, false, "hunk del", diffLine{Kind: "del", Old: 1, Text: "bye"}},
		{"renamed", d.Files[3], "moved.go", "renamed", 0, 0, false, "", diffLine{}},
		{"binary", d.Files[4], "logo.png", "modified", 0, 0, true, "", diffLine{}},
		{"mode change", d.Files[5], "run.sh", "mode", 0, 0, false, "", diffLine{}},
		{"quoted name", d.Files[6], "café.txt", "added", 1, 0, false, "hunk add", diffLine{Kind: "add", New: 1, Text: "<script>x</script>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file
			var kinds []string
			for _, l := range f.Lines {
				kinds = append(kinds, l.Kind)
			}
			if f.Path() != tc.path || f.Status != tc.status || f.Additions != tc.add || f.Deletions != tc.del ||
				f.Binary != tc.binary || strings.Join(kinds, " ") != tc.kinds {
				t.Errorf("got %s %s +%d -%d binary=%v kinds %q", f.Path(), f.Status, f.Additions, f.Deletions, f.Binary, strings.Join(kinds, " "))
			}
			if len(f.Lines) > 1 && f.Lines[1] != tc.firstNumbered {
				t.Errorf("first line = %+v, want %+v", f.Lines[1], tc.firstNumbered)
			}
		})
	}
	if d.Files[0].Lines[3] != (diffLine{Kind: "add", New: 2, Text: "deux"}) || d.Files[0].Lines[4] != (diffLine{Kind: "ctx", Old: 3, New: 3, Text: "three"}) {
		t.Errorf("line numbers after a change: %+v", d.Files[0].Lines[3:5])
	}
	if d.Files[3].OldPath != "old.go" || d.Additions != 3 || d.Deletions != 2 || d.Truncated {
		t.Errorf("rename from %q, totals +%d -%d, truncated %v", d.Files[3].OldPath, d.Additions, d.Deletions, d.Truncated)
	}
}

func TestParseDiffTruncatesHugeDiffs(t *testing.T) {
	var b strings.Builder
	b.WriteString("diff --git a/big b/big\n--- a/big\n+++ b/big\n@@ -0,0 +1,30000 @@\n")
	for range 30000 {
		b.WriteString("+x\n")
	}
	d := parseDiff([]byte(b.String()))
	if !d.Truncated || len(d.Files[0].Lines) != maxDiffLines {
		t.Fatalf("truncated %v with %d lines; want cut at %d", d.Truncated, len(d.Files[0].Lines), maxDiffLines)
	}
}

func TestRenderMarkdown(t *testing.T) {
	tests := []struct {
		name, src    string
		want, absent []string
	}{
		{"scripts and embeds are dropped with their content", "hi <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n<iframe src=\"https://evil.test\"></iframe><svg><script>x()</script></svg>\n",
			[]string{"<p>hi ", `<img src="x"/>`}, []string{"<script", "alert", "<iframe", "onerror", "<svg", "x()"}},
		{"dangerous link targets are dropped", "[click](javascript:alert(1)) [ok](https://example.com/a) <a href=\"java&#x09;script:x\">t</a> <a href=\" JavaScript:x\">u</a> [m](mailto:a@example.com) <img src=\"mailto:x\">",
			[]string{`<a>click</a>`, `<a href="https://example.com/a">ok</a>`, `<a>t</a>`, `<a>u</a>`, `<a href="mailto:a@example.com">m</a>`, `<img/>`},
			[]string{"javascript:", "script:x", "mailto:x"}},
		{"tables", "| a | b |\n|---|---|\n| 1 | 2 |\n", []string{"<table>", "<th>a</th>", "<td>2</td>"}, nil},
		{"strikethrough", "~~gone~~", []string{"<del>gone</del>"}, nil},
		{"task lists", "- [x] done\n- [ ] todo\n", []string{`<input type="checkbox" disabled="" checked=""/> done`, `<input type="checkbox" disabled=""/> todo`}, nil},
		{"other inputs are dropped", `<input type="text" value="x"> <input type="checkbox" onclick="x()">`, []string{`<input type="checkbox" disabled=""/>`}, []string{"text", "value", "onclick"}},
		{"autolinks", "see https://example.com/x and www.example.org", []string{`<a href="https://example.com/x">`, `<a href="http://www.example.org">`}, nil},
		{"code keeps markup as text", "`<b>x</b>`", []string{"<code>&lt;b&gt;x&lt;/b&gt;</code>"}, []string{"<b>"}},
		{"sub, sup and small are kept, nested as written", "H<sub>2</sub>O x<sup>2</sup> <small>fine print</small> " + strings.Repeat("<sub>", 12) + "tiny" + strings.Repeat("</sub>", 12),
			[]string{"H<sub>2</sub>O", "x<sup>2</sup>", "<small>fine print</small>", strings.Repeat("<sub>", 12) + "tiny" + strings.Repeat("</sub>", 12)}, nil},
		{"GitHub's other inline elements are kept", "<kbd>Ctrl</kbd> <ins>a</ins> <s>b</s> <mark>c</mark> <ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp></ruby> <abbr title=\"t\">d</abbr>",
			[]string{"<kbd>Ctrl</kbd>", "<ins>a</ins>", "<s>b</s>", "<mark>c</mark>", "<ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp></ruby>", `<abbr title="t">d</abbr>`}, nil},
		{"style, class and id are dropped; unknown elements keep their text", `<span style="color:white" class="x" id="checks">t</span> <font color="white">u</font> <section><custom>v</custom></section> <!-- w -->`,
			[]string{"<span>t</span>", "u", "v"}, []string{"style=", "class=", "id=", "<font", "<section", "<custom", "<!--", "w"}},
		{"details and summary are kept", "<details>\n<summary>Phases & <b>more</b></summary>\n\n| x |\n|---|\n| 1 |\n\n</details>\n",
			[]string{"<details>", "</details>", "<table>", "<summary>Phases &amp; <b>more</b></summary>"}, nil},
		{"a plain summary line is escaped", "<details open>\n<summary>Tests (2 runs) & more</summary>\n\nbody\n\n</details>\n",
			[]string{`<details open="">`, "<summary>Tests (2 runs) &amp; more</summary>", "<p>body</p>"}, nil},
		{"attributes on details are not kept", "<details onclick=\"x()\">\n<summary>s</summary>\n\n</details>\n",
			[]string{"<summary>s</summary>"}, []string{"onclick", "<details "}},
		{"stray and unclosed tags stay inside the body", "</div></div></div>after <details><summary>s</summary>unclosed",
			[]string{"after <details><summary>s</summary>unclosed</details>"}, []string{"</div>"}},
		{"headings get no ids that could clash with the page's", "# Checks\n\n<h2 id=\"checks\">x</h2>\n", []string{"<h1>Checks</h1>", "<h2>x</h2>"}, []string{"id="}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(renderMarkdown(tc.src))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("%q present in:\n%s", a, got)
				}
			}
		})
	}
}

func TestLabelColorsContrast(t *testing.T) {
	tests := []struct{ stored, bg, fg string }{
		{"5319e7", "#5319e7", "#ffffff"}, // purple: white text
		{"fbca04", "#fbca04", "#1f2328"}, // yellow: dark text
		{"FFFFFF", "#ffffff", "#1f2328"},
		{"000000", "#000000", "#ffffff"},
		{"b60205", "#b60205", "#ffffff"},
		{"red;}", "#ededed", "#1f2328"}, // not a colour: grey, never the stored text
		{"12345", "#ededed", "#1f2328"},
	}
	for _, tc := range tests {
		t.Run(tc.stored, func(t *testing.T) {
			bg, fg := labelColors(tc.stored)
			if bg != tc.bg || fg != tc.fg {
				t.Errorf("labelColors(%q) = %s on %s, want %s on %s", tc.stored, fg, bg, tc.fg, tc.bg)
			}
		})
	}
}

// FuzzRenderMarkdown: whatever a body holds, the page built from renderMarkdown's output
// (as the browser builds it) has only allowed elements and attributes, no comment, and
// links and images only to safe URLs: nothing the output serializes can turn into more
// when parsed again.
func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{
		"<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<a href=\"javascript:x\">a</a>",
		"<svg><style><img src=x onerror=alert(1)></style></svg>", "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
		"<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">", "<!-- --!><img src=x onerror=alert(1)> -->",
		"<textarea></textarea><script>x</script>", "<sub><sub><sub>x", "<details open><summary>s</summary>b",
		"[a](<javascript:x>) ![b](data:image/png;base64,AAAA)", "<table><td><form><input type=checkbox onclick=x>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := string(renderMarkdown(src))
		nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
		if err != nil {
			return // nested past the parser's depth: renderMarkdown showed it as escaped text
		}
		var check func(n *html.Node)
		check = func(n *html.Node) {
			switch n.Type {
			case html.TextNode:
			case html.ElementNode:
				if !ghhtml.Kept(n.DataAtom) || n.Namespace != "" {
					t.Fatalf("element <%s> in %q from %q", n.Data, out, src)
				}
				for _, a := range n.Attr {
					if !(allowedAttrs[0][a.Key] || allowedAttrs[n.DataAtom][a.Key]) || !attrValueOK(n.DataAtom, a) {
						t.Fatalf("attribute %s=%q on <%s> in %q from %q", a.Key, a.Val, n.Data, out, src)
					}
				}
			default:
				t.Fatalf("node of type %d in %q from %q", n.Type, out, src)
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				check(c)
			}
		}
		for _, n := range nodes {
			check(n)
		}
	})
}

// TestCheckLocal: a form post is taken only from loopback, to a loopback host, from a
// page of that very host; each way out is tried as an attacker would.
func TestCheckLocal(t *testing.T) {
	tests := []struct {
		name                        string
		remote, host, origin, refer string
		site                        string
		ok                          bool
	}{
		{"the emulator's own page", "127.0.0.1:5000", "127.0.0.1:8080", "http://127.0.0.1:8080", "", "same-origin", true},
		{"IPv6 loopback", "[::1]:5000", "[::1]:8080", "http://[::1]:8080", "", "", true},
		{"localhost, no Origin but a Referer", "127.0.0.1:5000", "localhost:8080", "", "http://localhost:8080/acme/widgets/pull/1", "", true},
		{"from another machine", "192.0.2.7:5000", "127.0.0.1:8080", "http://127.0.0.1:8080", "", "", false},
		{"a rebound name", "127.0.0.1:5000", "evil.example:8080", "http://evil.example:8080", "", "same-origin", false},
		{"a name that only looks local", "127.0.0.1:5000", "127.0.0.1.evil.example:8080", "http://127.0.0.1.evil.example:8080", "", "", false},
		{"another site", "127.0.0.1:5000", "127.0.0.1:8080", "http://evil.example", "", "cross-site", false},
		{"another port of this machine", "127.0.0.1:5000", "127.0.0.1:8080", "http://127.0.0.1:9999", "", "same-site", false},
		{"an opaque origin", "127.0.0.1:5000", "127.0.0.1:8080", "null", "", "", false},
		{"no Origin, no Referer", "127.0.0.1:5000", "127.0.0.1:8080", "", "", "", false},
		{"a Referer from elsewhere", "127.0.0.1:5000", "127.0.0.1:8080", "", "http://evil.example/x", "", false},
		{"the right origin, the browser says cross-site", "127.0.0.1:5000", "127.0.0.1:8080", "http://127.0.0.1:8080", "", "cross-site", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/acme/widgets/pull/1/comments", nil)
			r.RemoteAddr, r.Host = tt.remote, tt.host
			for k, v := range map[string]string{"Origin": tt.origin, "Referer": tt.refer, "Sec-Fetch-Site": tt.site} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			why, err := checkLocal(r)
			if (err == nil) != tt.ok || (err != nil && why == "") {
				t.Errorf("checkLocal = %q, %v; want ok %v", why, err, tt.ok)
			}
		})
	}
}

// TestLocalPath: after signing in, the browser goes back only to a path of the
// emulator.
func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/acme/widgets/pull/1": "/acme/widgets/pull/1", "": "/", "https://evil.example/": "/",
		"//evil.example/x": "/", "/\\evil.example": "/", "javascript:alert(1)": "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}
