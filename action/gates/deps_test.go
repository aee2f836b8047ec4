package gates

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDependencies: the added lines of each manifest give the dependencies they add,
// each looked up in OSV; the ones with fixture advisories are findings.
func TestDependencies(t *testing.T) {
	files := []File{
		{Path: "go.mod", Added: []Line{{N: 6, Text: "\tgolang.org/x/net v0.7.0 // indirect"}, {N: 9, Text: "replace github.com/a/b => github.com/evil/b v1.0.0"}, {N: 1, Text: "module example.com/x"}}},
		{Path: "web/package.json", Added: []Line{{N: 8, Text: `    "lodash": "^4.17.15",`}, {N: 2, Text: `  "version": "2.0.0",`}, {N: 9, Text: `    "left-pad": "github:evil/left-pad"`}}},
		// A lock file's bump changes only its version line: the gate reads it whole.
		{Path: "web/package-lock.json", Added: []Line{{N: 6, Text: `      "version": "1.2.3",`}}},
		{Path: "requirements-dev.txt", Added: []Line{{N: 1, Text: "requests==2.19.0  # pinned"}, {N: 2, Text: "-r base.txt"}, {N: 3, Text: "flask[async]>=2.0"}}},
		{Path: "pyproject.toml", Added: []Line{{N: 12, Text: `  "httpx>=0.27",`}, {N: 20, Text: `django = "^4.2"`}}},
		{Path: "Cargo.toml", Added: []Line{{N: 7, Text: `smallvec = { version = "1.6.0", features = ["union"] }`}, {N: 3, Text: `edition = "2021"`}}},
	}
	srv, asked := fakeOSV(t)
	locks := []Lock{{Path: "web/package-lock.json",
		Base: []byte(`{"lockfileVersion": 3, "packages": {"": {"name": "web"}, "node_modules/@scope/pkg": {"version": "1.2.2"}, "node_modules/kept": {"version": "1.0.0"}}}`),
		Head: []byte("{\"lockfileVersion\": 3,\n \"packages\": {\n  \"\": {\"name\": \"web\"},\n  \"node_modules/kept\": {\"version\": \"1.0.0\"},\n  \"node_modules/@scope/pkg\": {\n      \"version\": \"1.2.3\"}}}")}}
	res := Check(t.Context(), Input{Files: files, Locks: locks}, Config{OSVURL: srv.URL})
	var got []string
	for _, d := range res.Dependencies {
		got = append(got, fmt.Sprintf("%s %s %s %s:%d %v", d.Ecosystem, d.Name, d.Version, d.File, d.Line, d.Advisories))
	}
	want := []string{
		"Go golang.org/x/net v0.7.0 go.mod:6 [GHSA-4374-p667-p6c8 GO-2023-1571]",
		"Go github.com/evil/b v1.0.0 go.mod:9 []",
		"npm lodash 4.17.15 web/package.json:8 [GHSA-p6mc-m468-83gw]",
		"npm left-pad  web/package.json:9 []",
		"PyPI requests 2.19.0 requirements-dev.txt:1 [PYSEC-2018-28]",
		"PyPI flask 2.0 requirements-dev.txt:3 []",
		"PyPI httpx 0.27 pyproject.toml:12 []",
		"PyPI django 4.2 pyproject.toml:20 []",
		"crates.io smallvec 1.6.0 Cargo.toml:7 [RUSTSEC-2021-0003]",
		"npm @scope/pkg 1.2.3 web/package-lock.json:5 []",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dependencies:\n%q\nwant\n%q", got, want)
	}
	if n := asked.Load(); n != 9 {
		t.Errorf("OSV was asked %d queries, want 9 (all but the one without a version)", n)
	}
	if len(res.ForReview()) != 4 {
		t.Errorf("findings %+v: want the 4 with advisories", res.Findings)
	}
	res = Check(t.Context(), Input{Files: files, Locks: locks}, Config{OSVURL: srv.URL, Actions: map[Gate]Action{GateDependencies: ActionBlock}})
	if len(res.Blocking()) != 4 {
		t.Errorf("with dependencies: block, findings %+v", res.Findings)
	}
}

// TestLockFiles: each lock file read whole at both ends gives the packages it pins at
// the head and did not at the base, whatever its lines' order; sources with no
// registry version are not asked about.
func TestLockFiles(t *testing.T) {
	for _, c := range []struct {
		path       string
		base, head string
		want       []string
	}{
		{"package-lock.json",
			`{"lockfileVersion": 1, "dependencies": {"a": {"version": "1.0.0"}}}`,
			`{"lockfileVersion": 1, "dependencies": {"a": {"version": "1.0.0", "dependencies": {"lodash": {"version": "4.17.15"}}}}}`,
			[]string{"npm lodash 4.17.15 :1"}},
		{"app/package-lock.json", "",
			"{\"packages\": {\n\"\": {},\n\"packages/ws\": {\"version\": \"0.0.1\"},\n\"node_modules/ws\": {\"link\": true},\n\"node_modules/x/node_modules/y\": {\"version\": \"2.0.0\"}}}",
			[]string{"npm y 2.0.0 :5"}},
		{"yarn.lock",
			"# yarn lockfile v1\n\nlodash@^4.17.0:\n  version \"4.17.14\"\n\nkept@^1:\n  version \"1.0.0\"\n",
			"# yarn lockfile v1\n\nkept@^1:\n  version \"1.0.0\"\n\n\"lodash@^4.17.0\", lodash@^4.17.15:\n  version \"4.17.15\"\n  resolved \"https://registry.yarnpkg.com/lodash/-/lodash-4.17.15.tgz\"\n\n\"@scope/p@git+https://x/p.git#abc\":\n  version \"9.9.9\"\n",
			[]string{"npm lodash 4.17.15 :7"}},
		{"yarn.lock", "",
			"__metadata:\n  version: 6\n\n\"@babel/core@npm:^7.0.0\":\n  version: 7.24.0\n  resolution: \"@babel/core@npm:7.24.0\"\n\n\"app@workspace:.\":\n  version: 0.0.0-use.local\n",
			[]string{"npm @babel/core 7.24.0 :5"}},
		{"pnpm-lock.yaml", "lockfileVersion: '9.0'\npackages:\n  lodash@4.17.14:\n    resolution: {integrity: sha512-x}\n",
			"lockfileVersion: '9.0'\npackages:\n  lodash@4.17.15:\n    resolution: {integrity: sha512-x}\n  '@scope/p@1.0.0':\n    resolution: {integrity: sha512-y}\n",
			[]string{"npm lodash 4.17.15 :3", "npm @scope/p 1.0.0 :5"}},
		{"pnpm-lock.yaml", "",
			"lockfileVersion: 5.4\npackages:\n  /@scope/q/2.1.0_react@18.0.0:\n    dev: false\n  /r/3.0.0:\n    dev: true\n  github.com/x/y/abc:\n    dev: true\n",
			[]string{"npm @scope/q 2.1.0 :3", "npm r 3.0.0 :5"}},
		{"pnpm-lock.yaml", "",
			"lockfileVersion: '6.0'\npackages:\n  /r@3.0.0(s@1.0.0):\n    dev: true\n  /t@https://x/t.tgz:\n    dev: true\n",
			[]string{"npm r 3.0.0 :3"}},
		{"Cargo.lock",
			"version = 3\n\n[[package]]\nname = \"smallvec\"\nversion = \"1.5.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n",
			"version = 3\n\n[[package]]\nname = \"mine\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"smallvec\"\nversion = \"1.6.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n[[package]]\nname = \"g\"\nversion = \"1.0.0\"\nsource = \"git+https://x/g#abc\"\n",
			[]string{"crates.io smallvec 1.6.0 :8"}},
		{"poetry.lock", "",
			"[[package]]\nname = \"requests\"\nversion = \"2.19.0\"\n\n[[package]]\nname = \"local\"\nversion = \"0.1\"\n\n[package.source]\ntype = \"directory\"\nurl = \"../local\"\n",
			[]string{"PyPI requests 2.19.0 :2"}},
		{"uv.lock", "",
			"version = 1\n\n[[package]]\nname = \"requests\"\nversion = \"2.19.0\"\nsource = { registry = \"https://pypi.org/simple\" }\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\nsource = { editable = \".\" }\n",
			[]string{"PyPI requests 2.19.0 :4"}},
		{"go.sum",
			"golang.org/x/net v0.6.0 h1:a=\ngolang.org/x/net v0.6.0/go.mod h1:b=\n",
			"golang.org/x/net v0.6.0 h1:a=\ngolang.org/x/net v0.6.0/go.mod h1:b=\ngolang.org/x/net v0.7.0 h1:c=\ngolang.org/x/net v0.7.0/go.mod h1:d=\ngolang.org/x/text v0.3.0/go.mod h1:e=\n",
			[]string{"Go golang.org/x/net v0.7.0 :3"}},
	} {
		t.Run(c.path, func(t *testing.T) {
			l := Lock{Path: c.path, Head: []byte(c.head)}
			if c.base != "" {
				l.Base = []byte(c.base)
			}
			deps, unread := dependencies([]File{{Path: c.path, Status: StatusModified}}, []Lock{l}, ActionReview)
			var got []string
			for _, d := range deps {
				got = append(got, fmt.Sprintf("%s %s %s :%d", d.Ecosystem, d.Name, d.Version, d.Line))
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) || len(unread) != 0 {
				t.Errorf("got %q, findings %+v\nwant %q", got, unread, c.want)
			}
		})
	}
}

// TestLockFileNotReadIsAFinding: an agent that makes a lock file the gate cannot read
// (or one too large to give it) does not get its pins past the gate unchecked.
func TestLockFileNotReadIsAFinding(t *testing.T) {
	for _, c := range []struct {
		what  string
		locks []Lock
	}{
		{"not JSON", []Lock{{Path: "package-lock.json", Head: []byte(`{"packages": {"node_modules/lodash": {"version": "4.17.15"}`)}}},
		{"a yarn.lock with a line outside any entry", []Lock{{Path: "yarn.lock", Head: []byte("lodash@^4:\n  version \"4.17.15\"\nnot an entry\n")}}},
		{"a go.sum line of two fields", []Lock{{Path: "go.sum", Head: []byte("golang.org/x/net v0.7.0\n")}}},
		{"too large to read", []Lock{{Path: "package-lock.json", Err: errors.New("larger than 32 MiB")}}},
		{"not given", nil},
	} {
		t.Run(c.what, func(t *testing.T) {
			path := "package-lock.json"
			if len(c.locks) > 0 {
				path = c.locks[0].Path
			}
			res := Check(t.Context(), Input{Files: []File{{Path: path, Status: StatusModified}}, Locks: c.locks}, Config{OSVURL: "http://127.0.0.1:1"})
			f := res.ForReview()
			if len(f) != 1 || f[0].Gate != GateDependencies || f[0].File != path || !strings.Contains(f[0].Message, "were not checked") {
				t.Errorf("findings %+v: want one dependencies finding saying %s was not checked", res.Findings, path)
			}
		})
	}
}
