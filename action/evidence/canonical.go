package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/jsondoc"
	"github.com/bumperdev/bumper/internal/revision"
)

// maxBundleBytes bounds what Parse reads.
const maxBundleBytes = 64 << 20

// Marshal writes the bundle as canonical JSON: object keys sorted at every level, two
// spaces of indentation, no HTML escaping, times in UTC, empty lists as [], and a
// trailing newline. Equal bundles give equal bytes. It fails only on values JSON cannot
// hold (a NaN or infinite confidence); it does not validate (see Validate).
func (e *Evidence) Marshal() ([]byte, error) {
	raw, err := json.Marshal(e.normalized())
	if err != nil {
		return nil, fmt.Errorf("failed to encode the evidence: %w", err)
	}
	return canonicalJSON(raw)
}

// Digest is "sha256:" and the hex SHA-256 of Marshal's bytes: the digest the runner
// reports to the App and that names the uploaded evidence.json.
func (e *Evidence) Digest() (string, error) {
	b, err := e.Marshal()
	if err != nil {
		return "", err
	}
	return revision.Of(b), nil
}

// Parse reads evidence.json strictly (at most 64 MiB, valid UTF-8, no duplicate or
// unknown keys) and validates it.
func Parse(data []byte) (*Evidence, error) {
	if len(data) > maxBundleBytes {
		return nil, fmt.Errorf("evidence is %d bytes; at most %d are read", len(data), maxBundleBytes)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("evidence is not valid UTF-8")
	}
	if err := jsondoc.CheckShape(data); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if err := validateSchema(evidenceSchemaURL, data); err != nil {
		return nil, fmt.Errorf("evidence does not match schema/evidence-v1.json: %w", err)
	}
	var e Evidence
	if err := decodeStrict(data, &e); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// canonicalJSON re-encodes a JSON document with sorted keys, keeping numbers as
// written.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("failed to re-read the evidence: %w", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil { // maps are written with sorted keys
		return nil, fmt.Errorf("failed to encode the evidence: %w", err)
	}
	return b.Bytes(), nil
}

// normalized is a copy of e with times in UTC and nil slices empty, so that equal
// bundles marshal to equal bytes.
func (e *Evidence) normalized() *Evidence {
	n := *e
	n.StartedAt = utc(e.StartedAt)
	n.EndedAt = utc(e.EndedAt)
	n.Approvals = make([]wire.Approval, len(e.Approvals))
	for i, a := range e.Approvals {
		a.At = utc(a.At)
		n.Approvals[i] = a
	}
	n.Phases = make([]Phase, len(e.Phases))
	for i, p := range e.Phases {
		p.StartedAt, p.EndedAt = utc(p.StartedAt), utc(p.EndedAt)
		n.Phases[i] = p
	}
	n.Commands = nonNil(e.Commands)
	n.Tests = make([]TestRun, len(e.Tests))
	for i, t := range e.Tests {
		t.Failures = nonNil(t.Failures)
		n.Tests[i] = t
	}
	n.Diff.Files = nonNil(e.Diff.Files)
	n.Egress.Allowed = nonNil(e.Egress.Allowed)
	n.Egress.Denied = nonNil(e.Egress.Denied)
	n.Ledger.Decisions = nonNil(e.Ledger.Decisions)
	n.Risk = nonNil(e.Risk)
	if e.Steers != nil {
		n.Steers = make([]Steer, len(e.Steers))
		for i, s := range e.Steers {
			s.CreatedAt, s.ArrivedAt, s.DeliveredAt = utc(s.CreatedAt), utc(s.ArrivedAt), utc(s.DeliveredAt)
			n.Steers[i] = s
		}
	}
	if e.Harness != nil {
		h := *e.Harness
		if h.ToolCalls == nil {
			h.ToolCalls = map[string]int{}
		}
		n.Harness = &h
	}
	if e.Environment != nil {
		env := *e.Environment
		env.Packages = nonNil(env.Packages)
		n.Environment = &env
	}
	n.Revocation.At = utc(e.Revocation.At)
	if e.Round != nil {
		n.Round = e.Round.normalized()
	}
	return &n
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
