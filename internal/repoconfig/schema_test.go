package repoconfig_test

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

// TestSchemaDocument: the schema is the file its URL names, and says so itself.
func TestSchemaDocument(t *testing.T) {
	onDisk, err := os.ReadFile("schema/bumper-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != string(repoconfig.SchemaJSON()) {
		t.Fatal("the embedded schema is not schema/bumper-v1.json")
	}
	// The URL is the raw file on the main branch: its path in the repository is this one.
	const raw = "https://raw.githubusercontent.com/bumperdev/bumper/main/"
	if !strings.HasPrefix(repoconfig.SchemaURL, raw) || strings.TrimPrefix(repoconfig.SchemaURL, raw) != "internal/repoconfig/schema/bumper-v1.json" {
		t.Fatalf("SchemaURL %s does not name internal/repoconfig/schema/bumper-v1.json on main", repoconfig.SchemaURL)
	}
	s := schemaMap(t)
	if s["$id"] != repoconfig.SchemaURL || s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$id %v, $schema %v", s["$id"], s["$schema"])
	}
	if repoconfig.SchemaModeline != "# yaml-language-server: $schema="+repoconfig.SchemaURL {
		t.Fatalf("modeline %q", repoconfig.SchemaModeline)
	}
}

func schemaMap(t testing.TB) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(repoconfig.SchemaJSON(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// custom are the keys of the types that read their own YAML (UnmarshalYAML), which
// their yaml tags do not show.
var custom = map[reflect.Type]map[string]reflect.Type{
	reflect.TypeFor[repoconfig.Reviewer](): {"harness": reflect.TypeFor[repoconfig.Harness](), "min_confidence": reflect.TypeFor[float64](), "revise_on_findings": reflect.TypeFor[bool]()},
}

var (
	unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	duration    = reflect.TypeFor[time.Duration]()
)

// keys are the keys a mapping decoded into t may hold, with the type each decodes into;
// nil for a type that is not a mapping.
func keys(t testing.TB, typ reflect.Type) map[string]reflect.Type {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if reflect.PointerTo(typ).Implements(unmarshaler) {
		k, ok := custom[typ]
		if !ok {
			t.Fatalf("%v reads its own YAML: name its keys in custom, and in the schema", typ)
		}
		return k
	}
	if typ.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			t.Fatalf("%v.%s has no yaml tag: the file's key is not visible", typ, f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// goType is the type Parse decodes the value at path into (keys and list indexes).
func goType(t testing.TB, path []any) reflect.Type {
	typ := reflect.TypeFor[repoconfig.Config]()
	for _, p := range path {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch p := p.(type) {
		case int:
			typ = typ.Elem()
		case string:
			next, ok := keys(t, typ)[p]
			if !ok {
				return nil
			}
			typ = next
		}
	}
	return typ
}

// resolve follows a local $ref.
func resolve(t testing.TB, root, s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			t.Fatalf("$ref %s is not to the schema's own $defs", ref)
		}
		def, _ := root["$defs"].(map[string]any)[name].(map[string]any)
		if def == nil {
			t.Fatalf("$ref %s names nothing", ref)
		}
		merged := map[string]any{}
		for k, v := range def {
			merged[k] = v
		}
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		s = merged
	}
}

// branches are s and its anyOf alternatives, each resolved.
func branches(t testing.TB, root, s map[string]any) []map[string]any {
	s = resolve(t, root, s)
	out := []map[string]any{s}
	alts, _ := s["anyOf"].([]any)
	for _, a := range alts {
		if m, ok := a.(map[string]any); ok {
			out = append(out, resolve(t, root, m))
		}
	}
	return out
}

// types are the JSON types s (or one of its alternatives) admits.
func types(t testing.TB, root, s map[string]any) []string {
	var out []string
	for _, b := range branches(t, root, s) {
		switch ty := b["type"].(type) {
		case string:
			out = append(out, ty)
		case []any:
			for _, x := range ty {
				out = append(out, x.(string))
			}
		}
	}
	return out
}

// jsonType is the JSON type a Go type is written as in the file.
func jsonType(typ reflect.Type) string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == duration:
		return "string"
	case reflect.PointerTo(typ).Implements(unmarshaler), typ.Kind() == reflect.Struct:
		return "object"
	}
	switch typ.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	}
	return typ.String()
}

// TestSchemaKnowsEveryKey: every key the parser reads is in the schema, with its JSON
// type and a description, and the schema has no key the parser lacks; wherever the
// parser is strict (everywhere), the schema refuses other keys. A key added to Config
// (or to the reviewer's keys) without the schema fails here.
func TestSchemaKnowsEveryKey(t *testing.T) {
	if got := slices.Sorted(maps.Keys(custom[reflect.TypeFor[repoconfig.Reviewer]()])); !slices.Equal(got, slices.Sorted(slices.Values(repoconfig.ReviewerKeys))) {
		t.Fatalf("the reviewer reads %v, this test knows %v: add the new keys here and to the schema", repoconfig.ReviewerKeys, got)
	}
	root := schemaMap(t)
	var walk func(path string, typ reflect.Type, s map[string]any)
	walk = func(path string, typ reflect.Type, s map[string]any) {
		want := keys(t, typ)
		// The mapping's schema is the one of s (or of an alternative) that types the
		// object: anyOf branches that only add constraints on its properties do not count.
		var props map[string]any
		for _, b := range branches(t, root, s) {
			if p, ok := b["properties"].(map[string]any); ok && slices.Contains(types(t, root, b), "object") {
				props = p
				if b["additionalProperties"] != false {
					t.Errorf("%s: the schema lets other keys through (additionalProperties is not false); the parser refuses them", path)
				}
				break
			}
		}
		if props == nil {
			t.Fatalf("%s: the schema declares no properties", path)
		}
		for k := range props {
			if _, ok := want[k]; !ok {
				t.Errorf("%s.%s is in the schema, but the parser refuses it", strings.TrimPrefix(path, "."), k)
			}
		}
		for k, kt := range want {
			at := strings.TrimPrefix(path+"."+k, ".")
			ps, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("%s is read by the parser but missing from schema/bumper-v1.json: add it, with a description", at)
				continue
			}
			if d, _ := resolve(t, root, ps)["description"].(string); d == "" {
				t.Errorf("%s has no description (editors show it)", at)
			}
			if jt := jsonType(kt); !slices.Contains(types(t, root, ps), jt) {
				t.Errorf("%s: the parser reads a %s (%v), the schema admits %v", at, jt, kt, types(t, root, ps))
			}
			if kt.Kind() == reflect.Slice {
				items, _ := resolve(t, root, ps)["items"].(map[string]any)
				if jt := jsonType(kt.Elem()); items == nil || !slices.Contains(types(t, root, items), jt) {
					t.Errorf("%s: the parser reads a list of %s, the schema's items are %v", at, jt, items)
				}
			}
			if keys(t, kt) != nil {
				walk(at, kt, ps)
			}
		}
	}
	walk("", reflect.TypeFor[repoconfig.Config](), root)
}
