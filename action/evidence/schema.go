package evidence

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed schema/*.json
var schemaFS embed.FS

const (
	schemaBase         = "https://github.com/bumperdev/bumper/blob/main/action/evidence/schema/"
	evidenceSchemaURL  = schemaBase + "evidence-v1.json"
	decisionsSchemaURL = schemaBase + "decisions-v1.json"
)

// SchemaFiles are the JSON Schemas (draft 2020-12) this package validates against, by
// file name: evidence-v1.json and decisions-v1.json.
func SchemaFiles() map[string][]byte {
	out := map[string][]byte{}
	for _, name := range []string{"evidence-v1.json", "decisions-v1.json"} {
		b, err := schemaFS.ReadFile("schema/" + name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		out[name] = b
	}
	return out
}

var schemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// Only the embedded files: a $ref to anything else fails instead of being fetched.
	c.UseLoader(refuseLoader{})
	for name, b := range SchemaFiles() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("failed to read schema/%s: %w", name, err)
		}
		if err := c.AddResource(schemaBase+name, doc); err != nil {
			return nil, fmt.Errorf("failed to add schema/%s: %w", name, err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, url := range []string{evidenceSchemaURL, decisionsSchemaURL} {
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("failed to compile %s: %w", url, err)
		}
		out[url] = s
	}
	return out, nil
})

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not embedded", url)
}

// Problem is one reason a bundle is invalid: where (a JSON pointer, "" for the whole
// document) and what.
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string { return pointerOrRoot(p.Path) + ": " + p.Message }

// ValidationError lists everything wrong with a bundle or a decisions file.
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

// validateSchema validates the JSON document data against the schema at url.
func validateSchema(url string, data []byte) error {
	all, err := schemas()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	err = all[url].Validate(doc)
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
				path += "/" + escapePointer(t)
			}
			// Messages may quote the input (unknown property names): keep them short.
			out = append(out, Problem{Path: path, Message: cutRunes(v.ErrorKind.LocalizedString(printer), 300)})
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

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}
