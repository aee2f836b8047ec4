package evidence

import (
	"embed"
	"sync"

	"github.com/bumperdev/bumper/internal/jsondoc"
)

//go:embed schema/*.json
var schemaFS embed.FS

const (
	schemaBase         = "https://github.com/bumperdev/bumper/blob/main/action/evidence/schema/"
	evidenceSchemaURL  = schemaBase + "evidence-v1.json"
	decisionsSchemaURL = schemaBase + "decisions-v1.json"
	repliesSchemaURL   = schemaBase + "replies-v1.json"
)

// schemaFiles are the JSON Schemas (draft 2020-12) this package validates against, by
// file name: evidence-v1.json, decisions-v1.json and replies-v1.json.
func schemaFiles() map[string][]byte {
	out := map[string][]byte{}
	for _, name := range []string{"evidence-v1.json", "decisions-v1.json", "replies-v1.json"} {
		b, err := schemaFS.ReadFile("schema/" + name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		out[name] = b
	}
	return out
}

var schemas = sync.OnceValues(func() (*jsondoc.Schemas, error) {
	return jsondoc.Compile(schemaBase, schemaFiles())
})

// validateSchema validates the JSON document data against the schema at url.
func validateSchema(url string, data []byte) error {
	all, err := schemas()
	if err != nil {
		return err
	}
	return all.Validate(url, data)
}
