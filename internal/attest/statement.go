package attest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/bumperdev/bumper/internal/revision"
	"github.com/bumperdev/bumper/internal/textcut"
)

// PayloadType is the DSSE payload type of an in-toto Statement.
const PayloadType = "application/vnd.in-toto+json"

// Names of the bundle and of the evidence it attests, in the run's files.
const (
	// BundleFile holds the run's envelopes, one JSON object a line (the in-toto
	// bundle convention).
	BundleFile = "evidence.intoto.jsonl"
	// EvidenceName is the evidence subject's name: evidence.json, beside the bundle.
	EvidenceName = "evidence.json"
)

// Digest algorithms of the subjects (the in-toto digest set's names).
const (
	algGitCommit = "gitCommit"
	algSHA256    = "sha256"
)

// Sign makes the Statement of a run, its subjects the head commit (named by the work
// item's repository) and evidence.json (evidenceDigest: "sha256:" and hex, as the runner
// reports it), its predicate p, and signs it in a DSSE envelope. It returns the envelope
// as one line of JSON, without its newline: a line of BundleFile. p is validated first;
// a predicate serve could not vouch for is never signed.
func (s *Signer) Sign(ctx context.Context, commit, evidenceDigest string, p Predicate) ([]byte, error) {
	if !revision.IsCommitID(commit) {
		return nil, fmt.Errorf("failed to attest: the head commit %q is not a full commit id", cut(commit))
	}
	if !revision.Valid(evidenceDigest) {
		return nil, fmt.Errorf("failed to attest: the evidence digest %q is not sha256: and 64 hex digits", cut(evidenceDigest))
	}
	p.AttestedAt = p.AttestedAt.UTC().Truncate(1e9)
	for i := range p.Approval.Approvers {
		p.Approval.Approvers[i].At = p.Approval.Approvers[i].At.UTC()
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("failed to attest: the predicate is not one serve signs: %w", err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the predicate: %w", err)
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, pred); err != nil {
		return nil, fmt.Errorf("failed to encode the predicate: %w", err)
	}
	st := &intoto.Statement{
		Type: intoto.StatementTypeUri,
		Subject: []*intoto.ResourceDescriptor{
			{Name: p.Repository(), Digest: map[string]string{algGitCommit: commit}},
			{Name: EvidenceName, Digest: map[string]string{algSHA256: strings.TrimPrefix(evidenceDigest, "sha256:")}},
		},
		PredicateType: PredicateType,
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("failed to make the statement: %w", err)
	}
	payload, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the statement: %w", err)
	}
	es, err := dsse.NewEnvelopeSigner(dsseSigner{s})
	if err != nil {
		return nil, fmt.Errorf("failed to sign the statement: %w", err)
	}
	env, err := es.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("failed to sign the statement: %w", err)
	}
	line, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the envelope: %w", err)
	}
	if len(line) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("failed to attest: the envelope is %d bytes, over %d", len(line), MaxEnvelopeBytes)
	}
	return line, nil
}

// sha256Hex is the evidence subject's digest of data.
func sha256Hex(data []byte) string {
	return strings.TrimPrefix(revision.Of(data), "sha256:")
}

// cut bounds what an error quotes of a bad value.
func cut(s string) string { return textcut.Clip(strings.ToValidUTF8(s, "?"), 80, "…") }
