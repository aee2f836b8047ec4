package attest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/bumperdev/bumper/internal/jsondoc"
	"github.com/bumperdev/bumper/internal/revision"
)

// MaxEnvelopeBytes bounds one envelope (a line of BundleFile): serve's are a few
// kilobytes; anything larger is refused before it is decoded.
const MaxEnvelopeBytes = 64 << 10

// KeyPath is where serve publishes its attestation public keys, as a PEM document
// (EncodePublicKeys): the signing key first, then any kept for verifying older bundles.
const KeyPath = "/api/v1/attestation/key"

// Attested is what a verified envelope says: a statement about Commit and about the
// evidence whose SHA-256 is EvidenceSHA256 (hex), signed by the key KeyID.
type Attested struct {
	Commit         string
	EvidenceSHA256 string
	Predicate      Predicate
	KeyID          string
	// Digest is the envelope line's revision ("sha256:" and hex), as the pull request's
	// evidence names it.
	Digest string
}

// ReadBundle returns the one envelope line of a BundleFile. Bumper writes exactly one;
// a file with none or with more is refused rather than picking one.
func ReadBundle(data []byte) ([]byte, error) {
	var lines [][]byte
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, bytes.TrimSpace(l))
		}
	}
	switch len(lines) {
	case 0:
		return nil, fmt.Errorf("the bundle is empty: want one DSSE envelope a line (%s as the run's artifact holds it)", BundleFile)
	case 1:
		return lines[0], nil
	}
	return nil, fmt.Errorf("the bundle holds %d envelopes; a Bumper run's %s holds exactly one", len(lines), BundleFile)
}

// Verify checks one envelope against the trusted keys and returns what it attests. It
// refuses, saying what failed: an envelope that is not exactly DSSE's JSON (an unknown
// field, which no signature covers), a payload type other than an in-toto Statement's,
// anything but exactly one signature, a signature no trusted key made, a statement that
// is not in-toto v1 of Bumper's predicate type, subjects other than exactly the commit
// and evidence.json, and a predicate serve could not have signed.
func Verify(ctx context.Context, line []byte, keys []PublicKey) (*Attested, error) {
	if len(keys) == 0 {
		return nil, errors.New("no trusted key: give serve's attestation public key (--key or --url)")
	}
	if len(line) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("the envelope is %d bytes; serve's are at most %d", len(line), MaxEnvelopeBytes)
	}
	var env dsse.Envelope
	if err := strictJSON(line, &env); err != nil {
		return nil, fmt.Errorf("not a DSSE envelope (truncated or altered?): %w", err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("the envelope's payloadType is %q, not %q: it is not an in-toto statement Bumper signed", cut(env.PayloadType), PayloadType)
	}
	if n := len(env.Signatures); n != 1 {
		return nil, fmt.Errorf("the envelope holds %d signatures; serve signs with exactly one key, so any other is not serve's", n)
	}
	verifiers := make([]dsse.Verifier, len(keys))
	for i, k := range keys {
		verifiers[i] = dsseVerifier{k}
	}
	ev, err := dsse.NewEnvelopeVerifier(verifiers...)
	if err != nil {
		return nil, fmt.Errorf("failed to set up the verification: %w", err)
	}
	accepted, payload, err := ev.VerifyAndDecode(ctx, &env)
	if err != nil || len(accepted) != 1 {
		return nil, fmt.Errorf("the signature (keyid %s) does not verify under the trusted key(s) %s: the envelope was altered or signed by another key", cut(env.Signatures[0].KeyID), keyIDs(keys))
	}
	att, err := readStatement(payload)
	if err != nil {
		return nil, err
	}
	att.KeyID = accepted[0].KeyID
	att.Digest = revision.Of(line)
	return att, nil
}

// readStatement reads a signed payload: an in-toto v1 Statement with Bumper's predicate.
func readStatement(payload []byte) (*Attested, error) {
	var st intoto.Statement
	if err := jsondoc.CheckShape(payload); err != nil {
		return nil, fmt.Errorf("the signed payload is ambiguous: %w", err)
	}
	if err := protojson.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("the signed payload is not an in-toto statement: %w", err)
	}
	if st.GetType() != intoto.StatementTypeUri {
		return nil, fmt.Errorf("the statement's _type is %q, not %q", cut(st.GetType()), intoto.StatementTypeUri)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the statement is not a valid in-toto statement: %w", err)
	}
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("the statement's predicateType is %q, not Bumper's %q", cut(st.GetPredicateType()), PredicateType)
	}
	att := &Attested{}
	var err error
	if att.Commit, att.EvidenceSHA256, err = subjects(st.GetSubject()); err != nil {
		return nil, err
	}
	raw, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, fmt.Errorf("failed to read the predicate: %w", err)
	}
	if err := strictJSON(raw, &att.Predicate); err != nil {
		return nil, fmt.Errorf("the predicate is not Bumper's %s: %w", PredicateType, err)
	}
	if err := att.Predicate.Validate(); err != nil {
		return nil, fmt.Errorf("the predicate is not one serve signs: %w", err)
	}
	if name := att.Predicate.Repository(); !strings.EqualFold(st.GetSubject()[0].GetName(), name) {
		return nil, fmt.Errorf("the commit subject is named %q, not the work item's repository %s", cut(st.GetSubject()[0].GetName()), name)
	}
	return att, nil
}

// subjects checks the statement names exactly the head commit (first, by gitCommit
// only) and evidence.json (second, by sha256 only), and returns their digests.
func subjects(subs []*intoto.ResourceDescriptor) (commit, evidence string, err error) {
	if len(subs) != 2 {
		return "", "", fmt.Errorf("the statement has %d subjects; Bumper's has exactly two: the head commit and %s", len(subs), EvidenceName)
	}
	c, e := subs[0], subs[1]
	commit = c.GetDigest()[algGitCommit]
	if len(c.GetDigest()) != 1 || !revision.IsCommitID(commit) {
		return "", "", fmt.Errorf("the first subject is not a commit: want only a %s digest of 40 hex digits", algGitCommit)
	}
	evidence = e.GetDigest()[algSHA256]
	if e.GetName() != EvidenceName || len(e.GetDigest()) != 1 || !revision.Valid("sha256:"+evidence) {
		return "", "", fmt.Errorf("the second subject is %q: want %s with only a %s digest", cut(e.GetName()), EvidenceName, algSHA256)
	}
	return commit, evidence, nil
}

// CheckEvidence says whether data is the evidence.json the statement is about.
func (a *Attested) CheckEvidence(data []byte) error {
	if got := sha256Hex(data); got != a.EvidenceSHA256 {
		return fmt.Errorf("%s does not match the statement: its sha256 is %s, the signed subject's %s (the file was changed, or is another run's)", EvidenceName, got, a.EvidenceSHA256)
	}
	return nil
}

// CheckCommit says whether the statement is about the head commit head.
func (a *Attested) CheckCommit(head string) error {
	if !revision.IsCommitID(head) {
		return fmt.Errorf("the head %q is not a full commit id (40 lower-case hex digits)", cut(head))
	}
	if head != a.Commit {
		return fmt.Errorf("the statement is about commit %s, not %s", a.Commit, head)
	}
	return nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields, duplicate keys, deep
// nesting and anything after the value: the signed bytes mean exactly one thing.
func strictJSON(data []byte, v any) error {
	if err := jsondoc.CheckShape(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

func keyIDs(keys []PublicKey) string {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID()
	}
	return strings.Join(ids, ", ")
}
