package repoconfig

import (
	"bytes"
	_ "embed" // the schema is part of the binary, as the parser it describes
)

// SchemaURL is the JSON Schema of .github/bumper.yml at version 1 (schema/bumper-v1.json
// in this repository, as the main branch has it): editors validate and complete the file
// from it (docs/usage.md, "Editors"), and `bumper doctor --repo` names it when the file
// is invalid. The schema's $id is this URL.
const SchemaURL = "https://raw.githubusercontent.com/bumperdev/bumper/main/internal/repoconfig/schema/bumper-v1.json"

// SchemaModeline is the first line of an example of the file: it tells the YAML language
// server (VS Code's YAML extension and other editors) which schema the file follows.
const SchemaModeline = "# yaml-language-server: $schema=" + SchemaURL

//go:embed schema/bumper-v1.json
var schemaJSON []byte

// SchemaJSON is schema/bumper-v1.json, the JSON Schema (draft 2020-12) of the file Parse
// reads. Parse is the authority; the schema says everything Parse checks that a JSON
// Schema can say (internal/repoconfig's tests hold the two to the same documents, and
// name what the schema cannot say).
func SchemaJSON() []byte { return bytes.Clone(schemaJSON) }
