package repoconfig_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
)

// repoRoot is the repository's top, from this package's directory.
const repoRoot = "../.."

// block is a fenced code block of a Markdown file.
type block struct {
	line int // of the opening fence
	lang string
	text string
}

// fencedBlocks are the fenced code blocks of md, each without the fence's indentation
// (a block in a list item is indented with it).
func fencedBlocks(md string) []block {
	var out []block
	var cur *block
	var indent string
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if lang, ok := strings.CutPrefix(trimmed, "```"); ok {
				cur = &block{line: i + 1, lang: lang}
				indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			}
			continue
		}
		if trimmed == "```" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.text += strings.TrimPrefix(line, indent) + "\n"
	}
	return out
}

// TestSchemaExamples: every example of .github/bumper.yml, in the documentation and in
// the repository's test data (the demo's sample repository, the environment builder's),
// is one an editor with the schema does not flag and Bumper reads; the documentation's
// examples start with the line that names the schema to the YAML language server.
func TestSchemaExamples(t *testing.T) {
	mds, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	mds = append(mds, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CONTRIBUTING.md"))
	examples := 0
	for _, md := range mds {
		raw, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, md)
		for _, b := range fencedBlocks(string(raw)) {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			where := name + ":" + strconv.Itoa(b.line)
			first, _, _ := strings.Cut(b.text, "\n")
			switch {
			case first == repoconfig.SchemaModeline:
				examples++
				repoconfigtest.Valid(t, where, []byte(b.text))
			case strings.HasPrefix(first, "# yaml-language-server:"):
				t.Errorf("%s: the modeline names another schema: %q; write %q", where, first, repoconfig.SchemaModeline)
			default:
				// A block Bumper would read as its file is an example of it.
				if _, err := repoconfig.Parse([]byte(b.text)); err == nil && strings.TrimSpace(b.text) != "" {
					t.Errorf("%s: an example of %s: start it with %q", where, repoconfig.Path, repoconfig.SchemaModeline)
				}
			}
		}
	}
	if examples < 5 {
		t.Fatalf("found %d examples of %s in the documentation; the docs have more", examples, repoconfig.Path)
	}

	files := 0
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		slash := filepath.ToSlash(p)
		if !d.IsDir() && (strings.HasSuffix(slash, "/.github/bumper.yml") || strings.HasSuffix(slash, "/.github/bumper.yaml")) {
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			name, _ := filepath.Rel(repoRoot, p)
			repoconfigtest.Valid(t, name, raw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("found %d .github/bumper.yml files in the test data; there are at least 3", files)
	}
}
