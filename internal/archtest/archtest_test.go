// Package archtest checks the import rules of DESIGN.md ("which way the imports run")
// from `go list -deps -test -json`: each room can be understood, tested and replaced
// alone only while these hold. A new rule is one line in rules.
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/bumperdev/bumper"

// rule forbids packages under from (module-relative; "" is the whole module) to depend,
// directly or not, on anything under the not prefixes (module-relative, or a full import
// path for third-party and standard packages), except the listed exceptions. tests
// says whether test code is held to it too.
type rule struct {
	from   string
	except []string // packages under from the rule does not apply to
	not    []string
	allow  []string // packages under not that are allowed all the same
	tests  bool
	why    string
}

var rules = []rule{
	{from: "app", not: []string{"sandbox", "firewall", "action"}, tests: true, why: "the control plane never touches a VM; it reaches runners over HTTP only"},
	{from: "firewall", not: []string{"sandbox", "app", "action", "cmd"}, tests: true, why: "the firewall stands alone; its tests share only the emulator's helpers"},
	{from: "sandbox", not: []string{"firewall", "app", "action", "cmd"}, tests: true, why: "the sandbox stands alone"},
	{from: "action", not: []string{"app"}, allow: []string{"app/wire"}, why: "the runner talks to the App over HTTP, sharing at most the wire types"},
	{from: "app/workitem", not: []string{"github.com/google/go-github", "net/http", "app/runnerapi", "app/handler", "app/ghclient"}, why: "the domain knows neither go-github nor the HTTP layer"},
	{from: "app/ledger", not: []string{"github.com/google/go-github", "net/http", "app/workitem", "app/runnerapi"}, why: "the ledger is the domain's storage format, below workitem"},
	{from: "ghemu", not: []string{"app", "firewall", "sandbox", "action", "cmd"}, tests: true, why: "the GitHub emulator imports no product package"},
	{from: "", except: []string{"cmd/bumper", "ghemu"}, not: []string{"ghemu"}, why: "no product package imports the emulator; only cmd/bumper and tests do"},
	{from: "ghemu/state", not: []string{"ghemu"}, why: "the emulator's world stands below its rooms: they use its API, it knows none of them"},
	{from: "ghemu/web", not: []string{"ghemu/rest"}, why: "the web view reads the world through its API, not through the REST layer"},
	{from: "ghemu/actions", not: []string{"ghemu/rest", "ghemu/web"}, why: "the runner works on the world through its API; the REST routes call it, not the other way round"},
	{from: "sandbox", except: []string{"sandbox/guest"}, not: []string{"sandbox/guest"}, why: "host-side sandbox code does not import the in-VM agent; they share sandbox/agentproto"},
	{from: "", except: []string{"cmd/bumper"}, not: []string{"cmd"}, tests: true, why: "cmd/bumper wires; nothing imports it"},
	{from: "internal", not: []string{"app", "firewall", "sandbox", "action", "cmd"}, why: "internal packages are shared by the App, the runner, the firewall and the sandbox (repoconfig, hostpattern, environment): they import none of them"},
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	ForTest    string
	Deps       []string
	Imports    []string
}

// under reports whether path (full import path) is p or below p, where p is
// module-relative ("" for the whole module) or, when it has a dot in its first
// element, a full import path.
func under(path, p string) bool {
	full := p
	if p == "" {
		full = module
	} else if !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && p != "net/http" {
		full = module + "/" + p
	}
	return path == full || strings.HasPrefix(path, full+"/")
}

// list runs go list over the module.
func list(t *testing.T) []pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Only the fields pkg reads: go list then skips the rest of each package's description.
	cmd := exec.Command("go", "list", "-deps", "-test", "-json=ImportPath,ForTest,Deps,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if strings.HasPrefix(p.ImportPath, module) {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// base is a package's path without go list's test decorations, and whether the entry
// is test code (a test variant, an external test package or the generated test main).
func base(p pkg) (string, bool) {
	path, variant, _ := strings.Cut(p.ImportPath, " ")
	isTest := variant != "" || p.ForTest != "" || strings.HasSuffix(path, ".test") || strings.HasSuffix(path, "_test")
	path = strings.TrimSuffix(strings.TrimSuffix(path, ".test"), "_test")
	return path, isTest
}

// violations applies the rules to the packages.
func violations(pkgs []pkg, rules []rule) []string {
	var out []string
	for _, p := range pkgs {
		path, isTest := base(p)
		if strings.HasSuffix(p.ImportPath, ".test") {
			continue // the generated test main imports everything under test
		}
		for _, r := range rules {
			if !under(path, r.from) || (isTest && !r.tests) || slices.ContainsFunc(r.except, func(e string) bool { return under(path, e) }) {
				continue
			}
			for _, d := range append(slices.Clone(p.Deps), p.Imports...) {
				d, _, _ = strings.Cut(d, " ")
				if d == path || !slices.ContainsFunc(r.not, func(n string) bool { return under(d, n) }) ||
					slices.ContainsFunc(r.allow, func(a string) bool { return under(d, a) }) {
					continue
				}
				out = append(out, p.ImportPath+" depends on "+d+": "+r.why)
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestImportRules runs under -short too (make unit): one go list of the module, well
// under a second, is cheap next to what an import that breaks a rule costs later.
func TestImportRules(t *testing.T) {
	for _, v := range violations(list(t), rules) {
		t.Error(v)
	}
}

// TestRulesBite checks the checker on made-up packages: a rule that cannot fail is no
// rule.
func TestRulesBite(t *testing.T) {
	m := func(s string) string { return module + "/" + s }
	pkgs := []pkg{
		{ImportPath: m("app/workitem"), Deps: []string{"fmt", m("app/ledger"), m("sandbox/netns")}},
		{ImportPath: m("app/ledger"), Deps: []string{"net/http"}},
		{ImportPath: m("firewall [" + m("firewall.test") + "]"), ForTest: m("firewall"), Deps: []string{m("app/ghclient")}},
		{ImportPath: m("app [" + m("app.test") + "]"), ForTest: m("app"), Deps: []string{m("ghemu")}},
		{ImportPath: m("action"), Deps: []string{m("app/wire"), m("app/workitem")}},
		{ImportPath: m("cmd/bumper"), Deps: []string{m("ghemu"), m("app")}},
		{ImportPath: m("sandbox"), Deps: []string{m("sandbox/guest")}},
		{ImportPath: m("sandbox/guest"), Deps: []string{m("sandbox/agentproto")}},
		{ImportPath: m("ghemu/state"), Deps: []string{m("internal/fsutil"), m("ghemu/render")}},
		{ImportPath: m("ghemu/rest"), Deps: []string{m("ghemu/state"), m("ghemu/actions")}},
	}
	got := violations(pkgs, rules)
	want := []string{
		m("action") + " depends on " + m("app/workitem"),
		m("app/ledger") + " depends on net/http",
		m("app/workitem") + " depends on " + m("sandbox/netns"),
		m("firewall [") + m("firewall.test") + "] depends on " + m("app/ghclient"),
		m("ghemu/state") + " depends on " + m("ghemu/render"),
		m("sandbox") + " depends on " + m("sandbox/guest"),
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+":") {
			t.Errorf("violation %d = %q, want %q…", i, got[i], want[i])
		}
	}
}
