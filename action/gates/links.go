package gates

import (
	"fmt"
	"html"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/bumperdev/bumper/internal/hostpattern"
)

// linkFile reports a file whose added lines are Markdown or HTML, or other markup GitHub
// renders with its images (reStructuredText, AsciiDoc, Org, Textile, RDoc, MediaWiki,
// Creole, Pod, notebooks).
func linkFile(p string) bool {
	switch path.Ext(normPath(p)) {
	case ".md", ".markdown", ".mdx", ".mdown", ".mkd", ".mkdn", ".rmd", ".html", ".htm", ".xhtml", ".svg",
		".rst", ".rest", ".adoc", ".asciidoc", ".asc", ".org", ".textile", ".rdoc", ".mediawiki", ".wiki", ".creole", ".pod", ".ipynb":
		return true
	}
	return false
}

// urlRe finds absolute and scheme-relative URLs (http, https, //host).
var urlRe = regexp.MustCompile(`(?i)(?:\bhttps?:)?//[^\s"'<>()\[\]{}` + "`" + `|]+`)

// imageRe tells an image from a link: Markdown's ![…](, HTML's src, srcset, poster.
var imageRe = regexp.MustCompile(`(?i)(?:!\[[^\]]*\]\(\s*<?|\b(?:src|srcset|poster|background|data)\s*=\s*["']?|url\(\s*["']?)$`)

// outboundLinks runs the links gate over the added lines of Markdown and HTML files and
// over the texts Bumper posts (Markdown on GitHub).
func outboundLinks(in Input, cfg Config) []Finding {
	allow := allowed(cfg)
	var out []Finding
	scan := func(file string, lines []Line) {
		for _, l := range lines {
			// Entities and backslashes are read as a browser reads them.
			text := strings.ReplaceAll(html.UnescapeString(stripHidden(l.Text)), `\`, "/")
			for _, m := range urlRe.FindAllStringIndex(text, -1) {
				raw := text[m[0]:m[1]]
				if !strings.Contains(strings.ToLower(raw), "http") && (m[0] == 0 || !strings.ContainsAny(text[m[0]-1:m[0]], "(\"'=< \t,")) {
					// "//" alone is a comment or a path, unless it stands where a URL does
					// (a srcset's later candidates follow a comma).
					continue
				}
				host := linkHost(raw)
				if host == "" || allow(host) {
					continue
				}
				what := "a link"
				if imageRe.MatchString(text[:m[0]]) {
					what = "an image"
				}
				out = append(out, Finding{Gate: GateLinks, File: file, Line: l.N, Action: cfg.ActionOf(GateLinks),
					Message: fmt.Sprintf("adds %s to %s, a host not on the allowlist", what, host)})
			}
		}
	}
	for _, f := range in.Files {
		if linkFile(f.Path) {
			scan(f.Path, f.Added)
		}
	}
	for _, t := range in.Texts {
		scan(t.Name, textLines(t.Body))
	}
	return out
}

// linkHost is a URL's host, lower case without a trailing dot, or "".
func linkHost(raw string) string {
	if strings.HasPrefix(raw, "//") {
		raw = "https:" + raw
	}
	u, err := url.Parse(strings.TrimRight(raw, ".,;:!?*_~"))
	if err != nil {
		// Unreadable to Go is not unreadable to a browser: name what follows //.
		rest := raw[strings.Index(raw, "//")+2:]
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[:i]
		}
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = rest[i+1:]
		}
		return strings.TrimSuffix(strings.ToLower(rest), ".")
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// allowed is the links gate's allowlist: the repository's entries and GitHub's host.
func allowed(cfg Config) func(string) bool {
	gh := cfg.GitHubHost
	if gh == "" {
		gh = "github.com"
	}
	entries := []hostpattern.Entry{}
	for _, s := range append([]string{gh}, cfg.Allowlist...) {
		if e, err := hostpattern.Parse(s); err == nil {
			entries = append(entries, e)
		}
	}
	return func(host string) bool {
		for _, e := range entries {
			switch {
			case e.Addr.IsValid():
				if strings.Trim(host, "[]") == e.Addr.String() {
					return true
				}
			case e.Wildcard:
				if strings.HasSuffix(host, "."+e.Name) {
					return true
				}
			case host == e.Name:
				return true
			}
		}
		return false
	}
}
