// Package jsondoc reads untrusted JSON documents strictly: one value, no duplicate object
// keys (two readers could take different ones), bounded nesting, and validation against
// embedded JSON Schemas (draft 2020-12) that never fetch anything. The evidence bundle,
// the agent's decision ledger and the reviewer's verdict are all read this way.
package jsondoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/bumperdev/bumper/internal/textcut"
)

// MaxDepth bounds the nesting of any document CheckShape accepts.
const MaxDepth = 32

// CheckShape reads data as exactly one JSON value, refusing duplicate object keys,
// nesting deeper than MaxDepth and trailing data. The error names where (a JSON pointer).
func CheckShape(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkValue(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: not valid JSON: %w", Pointer(path), err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxDepth {
		return fmt.Errorf("%s: nested deeper than %d levels", Pointer(path), MaxDepth)
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%s: not valid JSON: %w", Pointer(path), err)
			}
			key, _ := kt.(string)
			if seen[key] {
				shown, _ := textcut.Runes(key, 64)
				return fmt.Errorf("%s: duplicate key %q", Pointer(path), shown)
			}
			seen[key] = true
			if err := walkValue(dec, path+"/"+EscapePointer(key), depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s/%d", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("%s: not valid JSON: %w", Pointer(path), err)
	}
	return nil
}

// Pointer shows a JSON pointer, "(root)" for the whole document.
func Pointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// EscapePointer escapes one JSON pointer reference token (RFC 6901).
func EscapePointer(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// Problem is one reason a document is invalid: where (a JSON pointer, "" for the whole
// document) and what.
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string { return Pointer(p.Path) + ": " + p.Message }

// ValidationError lists everything wrong with a document.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	const shown = 20
	parts := make([]string, 0, min(len(e.Problems), shown)+1)
	for i, p := range e.Problems {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Problems)-shown))
			break
		}
		parts = append(parts, p.String())
	}
	return strings.Join(parts, "; ")
}

// Schemas is a set of compiled JSON Schemas, each known by its URL.
type Schemas struct {
	compiled map[string]*jsonschema.Schema
}

// Compile compiles the schema files (name → content), each addressed as base+name; a
// $ref to anything outside them fails instead of being fetched.
func Compile(base string, files map[string][]byte) (*Schemas, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	for name, b := range files {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("failed to read schema %s: %w", name, err)
		}
		if err := c.AddResource(base+name, doc); err != nil {
			return nil, fmt.Errorf("failed to add schema %s: %w", name, err)
		}
	}
	out := &Schemas{compiled: map[string]*jsonschema.Schema{}}
	for name := range files {
		s, err := c.Compile(base + name)
		if err != nil {
			return nil, fmt.Errorf("failed to compile %s: %w", base+name, err)
		}
		out.compiled[base+name] = s
	}
	return out, nil
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not embedded", url)
}

// Validate validates the JSON document data against the schema at url; a document that
// does not match gives a *ValidationError listing every leaf problem, sorted by path.
func (s *Schemas) Validate(url string, data []byte) error {
	sch, ok := s.compiled[url]
	if !ok {
		return fmt.Errorf("no schema %s", url)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	err = sch.Validate(doc)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return &ValidationError{Problems: leafProblems(ve)}
	}
	return err
}

var printer = message.NewPrinter(language.English)

// leafProblems flattens a schema validation error to its leaves, sorted by path.
func leafProblems(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			path := ""
			for _, t := range v.InstanceLocation {
				path += "/" + EscapePointer(t)
			}
			// Messages may quote the input (unknown property names): keep them short.
			msg, _ := textcut.Runes(v.ErrorKind.LocalizedString(printer), 300)
			out = append(out, Problem{Path: path, Message: msg})
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
