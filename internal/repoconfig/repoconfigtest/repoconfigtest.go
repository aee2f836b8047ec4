// Package repoconfigtest reads a .github/bumper.yml document the way an editor does, as
// YAML validated against the file's JSON Schema (repoconfig.SchemaJSON), so that tests
// can hold the schema and the Go parser (repoconfig.Parse) to the same documents.
package repoconfigtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/internal/jsondoc"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

const (
	schemaBase = "https://raw.githubusercontent.com/bumperdev/bumper/main/internal/repoconfig/schema/"
	schemaName = "bumper-v1.json"
)

var schemas = sync.OnceValues(func() (*jsondoc.Schemas, error) {
	return jsondoc.Compile(schemaBase, map[string][]byte{schemaName: repoconfig.SchemaJSON()})
})

// Validate reads raw as YAML and validates the document against the schema: nil when
// the schema accepts it. Scalars are typed as YAML's core schema types them (an editor's
// YAML 1.2): `yes` is a string, `1.5` a number.
func Validate(raw []byte) error {
	s, err := schemas()
	if err != nil {
		return err
	}
	doc, err := ToJSON(raw)
	if err != nil {
		return err
	}
	return s.Validate(repoconfig.SchemaURL, doc)
}

// ToJSON is the YAML document raw as the JSON value a schema validator sees. It refuses
// what JSON cannot carry (.nan, .inf), duplicate keys and keys that are not scalars.
func ToJSON(raw []byte) ([]byte, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	var v any
	if len(root.Content) > 0 {
		var err error
		if v, err = value(root.Content[0]); err != nil {
			return nil, err
		}
	}
	return json.Marshal(v)
}

// value converts one node.
func value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return value(n.Alias)
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := value(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		if err := merge(out, n, true); err != nil {
			return nil, err
		}
		return out, nil
	case yaml.ScalarNode:
		return scalar(n)
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
}

// merge adds a mapping's entries to out, following YAML merge keys (<<) as the parser
// does; an entry of the mapping itself wins over a merged one.
func merge(out map[string]any, n *yaml.Node, own bool) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a merge (<<) takes a mapping", n.Line)
	}
	seen := map[string]bool{}
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a key that is not a scalar", k.Line)
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, v)
			continue
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: key %q is defined twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if _, ok := out[k.Value]; ok && !own {
			continue
		}
		x, err := value(v)
		if err != nil {
			return err
		}
		out[k.Value] = x
	}
	for _, m := range merged {
		if m.Kind == yaml.SequenceNode {
			for _, c := range m.Content {
				if err := merge(out, c, false); err != nil {
					return err
				}
			}
			continue
		}
		if err := merge(out, m, false); err != nil {
			return err
		}
	}
	return nil
}

// scalar types a scalar by its resolved tag.
func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("line %d: %s is not a number JSON can carry", n.Line, n.Value)
		}
		return f, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	default:
		return nil, fmt.Errorf("line %d: tag %s is not one an editor knows", n.Line, n.Tag)
	}
}

// Valid fails t unless both the schema and repoconfig.Parse accept raw: an example of
// the file, which an editor must not flag and Bumper must read.
func Valid(t testing.TB, name string, raw []byte) {
	t.Helper()
	if _, err := repoconfig.Parse(raw); err != nil {
		t.Errorf("%s: the parser refuses it: %v", name, err)
	}
	if err := Validate(raw); err != nil {
		t.Errorf("%s: the schema refuses it: %v", name, err)
	}
}

// Agree fails t unless the schema and repoconfig.Parse both accept raw or both refuse it.
func Agree(t testing.TB, name string, raw []byte) {
	t.Helper()
	_, perr := repoconfig.Parse(raw)
	serr := Validate(raw)
	if (perr == nil) != (serr == nil) {
		t.Errorf("%s: the parser and the schema disagree\nparser: %v\nschema: %v\n%s", name, orOK(perr), orOK(serr), indent(raw))
	}
}

func orOK(err error) string {
	if err == nil {
		return "accepts it"
	}
	return err.Error()
}

func indent(raw []byte) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(string(raw), "\n"), "\n", "\n    ")
}
