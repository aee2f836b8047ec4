// Package verdict reads a Bumper reviewer's verdict (verdict.json), which is untrusted:
// the review run's VM also runs the code under review. The App and the runner read it
// with this one parser; the App decides what it means (see Passes) and posts it.
package verdict

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/jsondoc"
)

// File is the name the reviewer writes its verdict to, in the VM's /out.
const File = "verdict.json"

// SchemaVersion is the version of verdict.json this package reads
// (schema/verdict-v1.json).
const SchemaVersion = 1

// MaxBytes bounds verdict.json.
const MaxBytes = 256 << 10

// The verdicts.
const (
	Approve        = "approve"
	RequestChanges = "request_changes"
	Comment        = "comment"
)

// The sides of a diff a finding can be on.
const (
	SideLeft  = "LEFT"
	SideRight = "RIGHT"
)

// Severities, most severe first.
var Severities = []string{"blocker", "major", "minor", "nit"}

// Verdict is a reviewer's judgement of a pull request.
type Verdict struct {
	SchemaVersion int       `json:"schema_version"`
	Verdict       string    `json:"verdict"`
	Confidence    float64   `json:"confidence"`
	Summary       string    `json:"summary"`
	Findings      []Finding `json:"findings"`
}

// Finding is one thing the reviewer found. File and Line are empty for a finding about
// the change as a whole; Side is RIGHT when absent.
type Finding struct {
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Side     string `json:"side,omitempty"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

//go:embed schema/verdict-v1.json
var schemaFS embed.FS

const (
	schemaBase = "https://github.com/bumperdev/bumper/blob/main/internal/verdict/schema/"
	schemaName = "verdict-v1.json"
)

// Schema is schema/verdict-v1.json, the JSON Schema (draft 2020-12) a verdict matches.
func Schema() []byte {
	b, err := schemaFS.ReadFile("schema/" + schemaName)
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	return b
}

var schemas = sync.OnceValues(func() (*jsondoc.Schemas, error) {
	return jsondoc.Compile(schemaBase, map[string][]byte{schemaName: Schema()})
})

// ErrInvalid is wrapped by every refusal of Parse: the document is not a verdict.
var ErrInvalid = errors.New("invalid verdict")

// Parse reads verdict.json: at most MaxBytes of valid UTF-8 holding one JSON object with
// no duplicate keys, valid against schema/verdict-v1.json. The error says what was wrong
// and where (a JSON pointer), and wraps ErrInvalid.
func Parse(data []byte) (Verdict, error) {
	var v Verdict
	switch {
	case len(data) == 0:
		return v, fmt.Errorf("%w: %s is empty", ErrInvalid, File)
	case len(data) > MaxBytes:
		return v, fmt.Errorf("%w: %s is %d bytes; at most %d are read", ErrInvalid, File, len(data), MaxBytes)
	case !utf8.Valid(data):
		return v, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, File)
	}
	if err := jsondoc.CheckShape(data); err != nil {
		return v, fmt.Errorf("%w: %s: %w", ErrInvalid, File, err)
	}
	all, err := schemas()
	if err != nil {
		return v, err
	}
	if err := all.Validate(schemaBase+schemaName, data); err != nil {
		return v, fmt.Errorf("%w: %s does not match the verdict schema (verdict-v1): %w", ErrInvalid, File, err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%w: %s: %w", ErrInvalid, File, err)
	}
	for i := range v.Findings {
		if v.Findings[i].Line > 0 && v.Findings[i].Side == "" {
			v.Findings[i].Side = SideRight
		}
	}
	return v, nil
}

// Digest is the SHA-256 of verdict.json exactly as the reviewer wrote it, as
// "sha256:<hex>": what the record keeps and `sha256sum verdict.json` shows.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Passes reports whether the verdict lets the bumper/verdict check succeed: approve,
// with a confidence at or above the repository's threshold. Anything else fails it:
// a verdict is never an approval, and neither is a doubtful one.
func (v Verdict) Passes(threshold float64) bool {
	return v.Verdict == Approve && v.Confidence >= threshold
}
