package gates

import (
	"fmt"
	"testing"
)

// TestDependencies: the added lines of each manifest give the dependencies they add,
// each looked up in OSV; the ones with fixture advisories are findings.
func TestDependencies(t *testing.T) {
	files := []File{
		{Path: "go.mod", Added: []Line{{N: 6, Text: "\tgolang.org/x/net v0.7.0 // indirect"}, {N: 9, Text: "replace github.com/a/b => github.com/evil/b v1.0.0"}, {N: 1, Text: "module example.com/x"}}},
		{Path: "web/package.json", Added: []Line{{N: 8, Text: `    "lodash": "^4.17.15",`}, {N: 2, Text: `  "version": "2.0.0",`}, {N: 9, Text: `    "left-pad": "github:evil/left-pad"`}}},
		{Path: "web/package-lock.json", Added: []Line{{N: 40, Text: `    "node_modules/@scope/pkg": {`}, {N: 41, Text: `      "version": "1.2.3",`}}},
		{Path: "requirements-dev.txt", Added: []Line{{N: 1, Text: "requests==2.19.0  # pinned"}, {N: 2, Text: "-r base.txt"}, {N: 3, Text: "flask[async]>=2.0"}}},
		{Path: "pyproject.toml", Added: []Line{{N: 12, Text: `  "httpx>=0.27",`}, {N: 20, Text: `django = "^4.2"`}}},
		{Path: "Cargo.toml", Added: []Line{{N: 7, Text: `smallvec = { version = "1.6.0", features = ["union"] }`}, {N: 3, Text: `edition = "2021"`}}},
	}
	srv, asked := fakeOSV(t)
	res := Check(t.Context(), Input{Files: files}, Config{OSVURL: srv.URL})
	var got []string
	for _, d := range res.Dependencies {
		got = append(got, fmt.Sprintf("%s %s %s %s:%d %v", d.Ecosystem, d.Name, d.Version, d.File, d.Line, d.Advisories))
	}
	want := []string{
		"Go golang.org/x/net v0.7.0 go.mod:6 [GHSA-4374-p667-p6c8 GO-2023-1571]",
		"Go github.com/evil/b v1.0.0 go.mod:9 []",
		"npm lodash 4.17.15 web/package.json:8 [GHSA-p6mc-m468-83gw]",
		"npm left-pad  web/package.json:9 []",
		"npm @scope/pkg 1.2.3 web/package-lock.json:41 []",
		"PyPI requests 2.19.0 requirements-dev.txt:1 [PYSEC-2018-28]",
		"PyPI flask 2.0 requirements-dev.txt:3 []",
		"PyPI httpx 0.27 pyproject.toml:12 []",
		"PyPI django 4.2 pyproject.toml:20 []",
		"crates.io smallvec 1.6.0 Cargo.toml:7 [RUSTSEC-2021-0003]",
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
	res = Check(t.Context(), Input{Files: files}, Config{OSVURL: srv.URL, Actions: map[Gate]Action{GateDependencies: ActionBlock}})
	if len(res.Blocking()) != 4 {
		t.Errorf("with dependencies: block, findings %+v", res.Findings)
	}
}
