package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	testFunc  = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	pkgPath   = regexp.MustCompile(`^[a-z][a-z0-9_]*(?:/[a-z0-9_]+)*$`)
	testToken = regexp.MustCompile(`^((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)(?:/.*)?$`)
)

// TestDocsNameRealTests: the docs name each rule with the test that shows it (the
// security table above all). A name is written as a package's folder in a code span,
// then its tests in code spans; every test so named must exist in that folder, or the
// table promises a proof that is not there (a test renamed, moved or deleted).
func TestDocsNameRealTests(t *testing.T) {
	root := filepath.Join("..", "..")
	tests := map[string]map[string]bool{} // folder → test functions
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range testFunc.FindAllSubmatch(data, -1) {
			if tests[dir] == nil {
				tests[dir] = map[string]bool{}
			}
			tests[dir][string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"))
	named := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			pkg := ""
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				tok := m[1]
				if pkgPath.MatchString(tok) {
					if _, ok := tests[tok]; ok || isGoPackage(filepath.Join(root, tok)) {
						pkg = tok
					}
					continue
				}
				tm := testToken.FindStringSubmatch(tok)
				if tm == nil || pkg == "" {
					continue
				}
				named++
				if !tests[pkg][tm[1]] {
					t.Errorf("%s:%d names %s %s, which %s does not have", filepath.Base(doc), n+1, pkg, tm[1], pkg)
				}
			}
		}
	}
	if named < 100 {
		t.Errorf("the docs name only %d tests after their package: the check reads them wrong", named)
	}
}

// isGoPackage says dir holds Go files.
func isGoPackage(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(files) > 0
}
