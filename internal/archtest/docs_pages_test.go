package archtest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// maxPageBytes bounds a page of docs/: a page a person reads answers one question, and
// one that grows past this answers several (split it by the reader's question).
const maxPageBytes = 30 * 1024

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineCode = regexp.MustCompile("``[^`].*?``|`[^`\n]*`")
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]*)\)`)
	linkText   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	urlScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// A page named in code or configuration, and the section quoted after it, if any:
	// docs/install.md, "Run serve" (or \"Run serve\" inside a Go string).
	docRef  = regexp.MustCompile(`(?:^|[^\w/.-])(docs/[\w.-]+\.md)(?:, \\?"([^"\\]+)\\?")?`)
	wrapped = regexp.MustCompile(`\s*\n\s*(?://|#)?\s*`)
)

// page is what a Markdown file offers to links: the anchors of its headings, and its
// headings' text.
type page struct {
	anchors  map[string]bool
	headings []string
}

// readPage reads a Markdown file's headings outside code blocks and gives each the
// anchor GitHub gives it.
func readPage(t *testing.T, path string) page {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		text := plainHeading(m[2])
		p.headings = append(p.headings, text)
		slug := githubSlug(text)
		if n := seen[slug]; n > 0 {
			p.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			p.anchors[slug] = true
		}
		seen[slug]++
	}
	return p
}

// plainHeading is a heading's text as rendered: links as their text, code without its
// backticks.
func plainHeading(md string) string {
	md = linkText.ReplaceAllString(md, "$1")
	return strings.ReplaceAll(md, "`", "")
}

// githubSlug is the anchor GitHub gives a heading: lower case, spaces to '-', and
// everything but letters, marks, digits, connector punctuation, '-' and ' ' dropped.
func githubSlug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// links returns the targets of a Markdown file's inline links and images, outside code.
func links(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var prose []string
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			prose = append(prose, "")
			continue
		}
		if inFence {
			line = ""
		}
		prose = append(prose, line)
	}
	text := inlineCode.ReplaceAllString(strings.Join(prose, "\n"), "code")
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// readers are the pages a person reads: the front page, the contributors' page, the
// changelog and every page of docs/.
func readers(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(docs,
		filepath.Join(root, "README.md"),
		filepath.Join(root, "CONTRIBUTING.md"),
		filepath.Join(root, "CHANGELOG.md"))
}

// TestDocsLinksResolve: every relative link of the pages people read leads somewhere: the
// file exists, and an anchor names a heading of that page as GitHub renders it. A page
// split or a heading renamed without its links fails here.
func TestDocsLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	pages := map[string]page{}
	pageOf := func(path string) page {
		if p, ok := pages[path]; ok {
			return p
		}
		p := readPage(t, path)
		pages[path] = p
		return p
	}
	checked := 0
	for _, doc := range readers(t, root) {
		name, _ := filepath.Rel(root, doc)
		for _, target := range links(t, doc) {
			if target == "" || urlScheme.MatchString(target) {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			dest := doc
			if file != "" {
				dest = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s links to %s, which does not exist", name, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s links to %s: an anchor into a file that is not Markdown", name, target)
				continue
			}
			if !pageOf(dest).anchors[anchor] {
				t.Errorf("%s links to %s, but %s has no heading with the anchor #%s", name, target, filepath.Base(dest), anchor)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d relative links found: the check reads the pages wrong", checked)
	}
}

// TestDocsPagesFit: no page of docs/ is longer than maxPageBytes.
func TestDocsPagesFit(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		info, err := os.Stat(doc)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > maxPageBytes {
			t.Errorf("docs/%s is %d bytes, over %d: split it by the reader's question (docs/README.md lists the pages)", filepath.Base(doc), info.Size(), maxPageBytes)
		}
	}
}

// TestCodeNamesRealDocs: where code, scripts or configuration send a person to a page of
// docs/ (an error message, a comment, a help text), the page exists, and a section
// quoted after it ("docs/install.md, \"Run serve\"") begins one of its headings.
func TestCodeNamesRealDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	named := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		if d.IsDir() {
			// testdata and the xxxtest packages hold made-up paths; docs/ is checked above.
			if path != root && (strings.HasPrefix(base, ".") && base != ".github" && base != ".ci" ||
				base == "testdata" || base == "node_modules" || base == "bin" || base == "dist" ||
				strings.HasSuffix(base, "test") || path == filepath.Join(root, "docs")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(base, "_test.go") || !codeFile(base) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range docRef.FindAllStringSubmatch(string(data), -1) {
			named++
			doc := filepath.Join(root, filepath.FromSlash(m[1]))
			if _, err := os.Stat(doc); err != nil {
				t.Errorf("%s names %s, which does not exist", rel, m[1])
				continue
			}
			if m[2] == "" {
				continue
			}
			section := wrapped.ReplaceAllString(m[2], " ") // a quote a comment wraps
			if !slices.ContainsFunc(readPage(t, doc).headings, func(h string) bool { return strings.HasPrefix(h, section) }) {
				t.Errorf("%s names %s, %q, but no heading of that page begins so", rel, m[1], section)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if named < 20 {
		t.Errorf("only %d references to docs/ found in the code: the check reads it wrong", named)
	}
}

// codeFile says whether a file is code, a script or configuration that may name a page.
func codeFile(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".sh", ".yml", ".yaml", ".json":
		return true
	}
	return name == "Dockerfile" || name == "Makefile"
}

// TestArchitectureNamesEveryPackage: docs/architecture.md's folder table has a row for
// every package of the module (go list ./...), and each row names something that exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	inFolders := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			inFolders = line == "## Folders"
			continue
		}
		if !inFolders || !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
			name := strings.TrimSuffix(m[1], "/")
			rows[name] = true
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(name))); err != nil {
				t.Errorf("docs/architecture.md's folder table names %s, which does not exist", m[1])
			}
		}
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 50 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if !rows[rel] {
			t.Errorf("docs/architecture.md's folder table has no row for %s: add one line on what it is (its package documentation says)", rel)
		}
	}
}
