package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/jsondoc"
)

// maxDecisionsBytes bounds the agent's decisions.json.
const maxDecisionsBytes = 256 << 10

// Decision is one judgment call the agent made where the issue was silent.
type Decision struct {
	// Question is what the issue did not say.
	Question string `json:"question"`
	// Choice is what the agent decided.
	Choice    string `json:"choice"`
	Rationale string `json:"rationale,omitempty"`
	// Confidence is how sure the agent is that a maintainer would have decided the
	// same, from 0 (a guess) to 1.
	Confidence   float64  `json:"confidence"`
	Alternatives []string `json:"alternatives,omitempty"`
}

// decisionsFile is decisions.json.
type decisionsFile struct {
	SchemaVersion int        `json:"schema_version"`
	Decisions     []Decision `json:"decisions"`
}

// parseDecisions reads the decision ledger the agent wrote, as NewLedger says.
func parseDecisions(data []byte) ([]Decision, error) {
	if len(data) > maxDecisionsBytes {
		return nil, fmt.Errorf("decisions.json is %d bytes; at most %d are read", len(data), maxDecisionsBytes)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("decisions.json is not valid UTF-8")
	}
	if err := jsondoc.CheckShape(data); err != nil {
		return nil, fmt.Errorf("decisions.json: %w", err)
	}
	if err := validateSchema(decisionsSchemaURL, data); err != nil {
		return nil, fmt.Errorf("decisions.json does not match schema/decisions-v1.json: %w", err)
	}
	var f decisionsFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("decisions.json: %w", err)
	}
	sortDecisions(f.Decisions)
	return f.Decisions, nil
}

// LeastConfidentFirst is a copy of the ledger's decisions, least confident first, as
// NewLedger sorts them: a bundle read from elsewhere may not be sorted.
func (l Ledger) LeastConfidentFirst() []Decision {
	out := slices.Clone(l.Decisions)
	sortDecisions(out)
	return out
}

// sortDecisions puts the least confident first, keeping the order of equals.
func sortDecisions(ds []Decision) {
	slices.SortStableFunc(ds, func(a, b Decision) int {
		switch {
		case a.Confidence < b.Confidence:
			return -1
		case a.Confidence > b.Confidence:
			return 1
		}
		return 0
	})
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
