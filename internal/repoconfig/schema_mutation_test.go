package repoconfig_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
)

// fullPolicy sets every key of the file, so that mutations reach every one.
const fullPolicy = `version: 1
plan: true
approvers:
  min_permission: maintain
  distinct_from_requester: true
allowed_bots: ["renovate[bot]"]
bounds:
  attempts: 5
  verification_rounds: 3
  fix_rounds: 4
  wall_time: 45m
  cost_per_run_usd: 2.5
  cost_per_item_usd: 10
harness:
  name: claude-code
  version: 2.1.328
  model: claude-sonnet-4-5
allowlist: [proxy.golang.org, "*.npmjs.org:443,8443", 203.0.113.7, "[2001:db8::1]:443"]
github_api: ["GET /repos/*/*/pulls", "HEAD /rate_limit"]
credentials: [npm-corp, pypi]
verification: ["go test ./...", make lint]
reviewer:
  harness: {name: command, command: sh review.sh}
  min_confidence: 0.7
environment:
  packages: [golang-go, git]
  setup: scripts/setup.sh
  inputs: [go.mod, "cmd/*/go.sum"]
  allow: [proxy.golang.org]
  cache_paths: [~/go/pkg/mod, /home/agent/.cache/go-build]
dependencies:
  repositories: [acme/lib, acme/.github]
`

// replacements are the values a mutation puts in place of each value of a document:
// other types, out-of-range numbers, and values right for some keys and wrong for others.
var replacements = []string{
	"~", `""`, "x", "0", "1", "-1", "3", "21", "1.5", "true", "yes", "[]", "[x]", "{}", "{x: 1}",
	"2.1.3", "30m", `"GET /x"`, "../x", "~/x", `"a b"`, `"example.org:0"`, "claude-code", "command",
}

// stricter says why the schema may refuse a mutant the parser reads: the value put at
// path (repl), in the classes TestSchemaStricter shows; "" when none applies.
func stricter(t testing.TB, path []any, repl string) string {
	typ := goType(t, path)
	if typ == nil {
		return ""
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var v any
	if err := yaml.Unmarshal([]byte(repl), &v); err != nil {
		t.Fatal(err)
	}
	isReviewer := typ == reflect.TypeFor[repoconfig.Reviewer]()
	switch v := v.(type) {
	case nil:
		return "a key without a value"
	case int, float64, bool:
		if f, ok := v.(float64); ok && f != float64(int64(f)) && typ.Kind() == reflect.Int && typ != duration {
			return "a fraction where a count is wanted"
		}
		if typ.Kind() == reflect.String {
			return "a number or boolean where text is wanted"
		}
	case string:
		if v == "yes" && (typ.Kind() == reflect.Bool || isReviewer) {
			return "a YAML 1.1 boolean"
		}
		last, _ := path[len(path)-1].(string)
		if v == "" && (slices.Contains([]string{"name", "version", "command", "model"}, last) || last == "setup") {
			return "an empty string read as absent"
		}
	}
	return ""
}

// position is a value of a document: its path (keys and list indexes) and its node.
type position struct {
	path []any
	node *yaml.Node
}

// positions are every value of the document under n.
func positions(n *yaml.Node, path []any) []position {
	var out []position
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := append(slices.Clone(path), n.Content[i].Value)
			out = append(out, position{p, n.Content[i+1]})
			out = append(out, positions(n.Content[i+1], p)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := append(slices.Clone(path), i)
			out = append(out, position{p, c})
			out = append(out, positions(c, p)...)
		}
	}
	return out
}

// mutant is a document one change away from a valid one: the path of the value changed,
// and the value put there ("" for a removal or an addition).
type mutant struct {
	path []any
	repl string
	doc  []byte
}

// mutants are the documents one change away from raw: each value replaced by each of
// replacements, each key or list item removed, an unknown key added to each mapping, each
// list's first item repeated.
func mutants(t testing.TB, raw []byte) []mutant {
	var out []mutant
	for i := range positionsOf(t, raw) {
		// change applies f to a fresh copy of the document, at its i-th value.
		change := func(repl string, f func(parent *yaml.Node, idx int, p position)) {
			var root yaml.Node
			if err := yaml.Unmarshal(raw, &root); err != nil {
				t.Fatal(err)
			}
			p := positions(root.Content[0], nil)[i]
			parent, idx := parentOf(root.Content[0], p.node)
			f(parent, idx, p)
			b, err := yaml.Marshal(&root)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, mutant{p.path, repl, b})
		}
		for _, r := range replacements {
			change(r, func(_ *yaml.Node, _ int, p position) { *p.node = *node(t, r) })
		}
		change("", func(parent *yaml.Node, idx int, _ position) {
			if parent.Kind == yaml.MappingNode {
				parent.Content = slices.Delete(parent.Content, idx-1, idx+1) // the key and its value
				return
			}
			parent.Content = slices.Delete(parent.Content, idx, idx+1)
		})
		change("", func(_ *yaml.Node, _ int, p position) {
			switch {
			case p.node.Kind == yaml.MappingNode:
				p.node.Content = append(p.node.Content, node(t, "bogus"), node(t, "1"))
			case p.node.Kind == yaml.SequenceNode && len(p.node.Content) > 0:
				p.node.Content = append(p.node.Content, p.node.Content[0])
			}
		})
	}
	return out
}

func positionsOf(t testing.TB, raw []byte) []position {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	if len(root.Content) == 0 {
		return nil
	}
	return positions(root.Content[0], nil)
}

// parentOf finds the mapping or list holding n and n's index in its Content.
func parentOf(root, n *yaml.Node) (*yaml.Node, int) {
	for i, c := range root.Content {
		if c == n {
			return root, i
		}
		if p, idx := parentOf(c, n); p != nil {
			return p, idx
		}
	}
	return nil, 0
}

// node is the YAML value s, as a node.
func node(t testing.TB, s string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("v: "+s+"\n"), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0].Content[1]
}

// TestSchemaMutations: documents one change away from the valid ones (the docs' examples,
// the test data's, one setting every key) are accepted by both the schema and the parser
// or refused by both; where only the schema refuses, the change is in one of the classes
// TestSchemaStricter shows; nowhere does the schema accept what the parser refuses.
func TestSchemaMutations(t *testing.T) {
	docs := map[string][]byte{"fullPolicy": []byte(fullPolicy)}
	for name, raw := range validExamples(t) {
		docs[name] = raw
	}
	classes := map[string]int{}
	n, failures := 0, 0
	for name, raw := range docs {
		for _, m := range mutants(t, raw) {
			n++
			_, perr := repoconfig.Parse(m.doc)
			serr := repoconfigtest.Validate(m.doc)
			if (perr == nil) == (serr == nil) {
				continue
			}
			if perr == nil {
				if why := stricter(t, m.path, m.repl); why != "" {
					classes[why]++
					continue
				}
			}
			if failures++; failures <= 20 {
				t.Errorf("%s, %v := %q: the parser and the schema disagree\nparser: %v\nschema: %v\n%s", name, m.path, m.repl, orAccepts(perr), orAccepts(serr), m.doc)
			}
		}
	}
	t.Logf("%d mutants of %d documents; the schema stricter by class: %v", n, len(docs), classes)
}

func orAccepts(err error) string {
	if err == nil {
		return "accepts it"
	}
	return err.Error()
}

// validExamples are the examples TestSchemaExamples checks, by where they are.
func validExamples(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	mds, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range mds {
		raw, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range fencedBlocks(string(raw)) {
			if (b.lang == "yaml" || b.lang == "yml") && strings.HasPrefix(b.text, repoconfig.SchemaModeline+"\n") {
				out[fmt.Sprintf("%s:%d", filepath.Base(md), b.line)] = []byte(b.text)
			}
		}
	}
	for _, f := range []string{"cmd/bumper/internal/demo/testdata/sample/.github/bumper.yml", "action/envbuild/testdata/gotoolchain/.github/bumper.yml"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = raw
	}
	return out
}
