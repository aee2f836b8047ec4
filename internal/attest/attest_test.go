package attest_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/revision"
)

const (
	head  = "0123456789abcdef0123456789abcdef01234567"
	other = "89abcdef0123456789abcdef0123456789abcdef"
)

var evidenceJSON = []byte(`{"schema":"bumper.evidence/v1","outcome":"success"}`)

func predicate() attest.Predicate {
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	return attest.Predicate{
		WorkItem: "acme/widgets#42",
		Stage:    "implement",
		Attempt:  1,
		Approval: attest.Approval{
			Revision:  revision.Of([]byte("approved")),
			Approvers: []attest.Approver{{Login: "maintainer", At: at, CommentID: 7}},
		},
		PolicyVersion: revision.Of([]byte("policy")),
		BaseCommit:    other,
		RunnerClaims: attest.Claims{
			ImageDigest:  revision.Of([]byte("image")),
			Harness:      attest.Harness{Name: "claude-code", Version: "2.0.1"},
			Verification: "passed",
			CostMicroUSD: 123456,
		},
		AttestedAt: at,
	}
}

func newSigner(t *testing.T) *attest.Signer {
	t.Helper()
	pemKey, err := attest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := attest.NewSigner(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sign(t *testing.T, s *attest.Signer) []byte {
	t.Helper()
	line, err := s.Sign(context.Background(), head, revision.Of(evidenceJSON), predicate())
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestRoundTrip(t *testing.T) {
	s := newSigner(t)
	line := sign(t, s)
	keys, err := attest.ParsePublicKeys(attest.EncodePublicKeys([]attest.PublicKey{s.PublicKey()}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := attest.Verify(context.Background(), line, keys)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if err := got.CheckEvidence(evidenceJSON); err != nil {
		t.Error(err)
	}
	if err := got.CheckCommit(head); err != nil {
		t.Error(err)
	}
	if got.KeyID != s.PublicKey().ID() || got.Predicate.WorkItem != "acme/widgets#42" || got.Predicate.RunnerClaims.CostMicroUSD != 123456 {
		t.Errorf("attested %+v", got)
	}
	if got.Digest != revision.Of(line) {
		t.Errorf("digest %s", got.Digest)
	}
}

// envelope decodes a signed line for an attacker to edit.
func envelope(t *testing.T, line []byte) (dsse.Envelope, map[string]any) {
	t.Helper()
	var env dsse.Envelope
	if err := json.Unmarshal(line, &env); err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	var st map[string]any
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	return env, st
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// resign signs an edited statement with key: what an attacker holding key can make.
func resign(t *testing.T, payloadType string, st map[string]any, priv ed25519.PrivateKey, keyid string) []byte {
	t.Helper()
	payload := encode(t, st)
	sig := ed25519.Sign(priv, dsse.PAE(payloadType, payload))
	return encode(t, dsse.Envelope{PayloadType: payloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []dsse.Signature{{KeyID: keyid, Sig: base64.StdEncoding.EncodeToString(sig)}}})
}

func TestAttacks(t *testing.T) {
	s := newSigner(t)
	keys := []attest.PublicKey{s.PublicKey()}
	line := sign(t, s)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name string
		line func() []byte
		want string
	}{
		{"another key signed it", func() []byte {
			_, st := envelope(t, line)
			return resign(t, attest.PayloadType, st, otherPriv, s.PublicKey().ID())
		}, "does not verify"},
		{"the statement names another head", func() []byte {
			env, st := envelope(t, line)
			st["subject"].([]any)[0].(map[string]any)["digest"] = map[string]any{"gitCommit": other}
			env.Payload = base64.StdEncoding.EncodeToString(encode(t, st))
			return encode(t, env)
		}, "does not verify"},
		{"a second signature by an unknown key", func() []byte {
			env, _ := envelope(t, line)
			payload, _ := base64.StdEncoding.DecodeString(env.Payload)
			sig := ed25519.Sign(otherPriv, dsse.PAE(env.PayloadType, payload))
			env.Signatures = append(env.Signatures, dsse.Signature{KeyID: "mallory", Sig: base64.StdEncoding.EncodeToString(sig)})
			return encode(t, env)
		}, "2 signatures"},
		{"the unknown key's signature first", func() []byte {
			env, _ := envelope(t, line)
			payload, _ := base64.StdEncoding.DecodeString(env.Payload)
			sig := ed25519.Sign(otherPriv, dsse.PAE(env.PayloadType, payload))
			env.Signatures = append([]dsse.Signature{{KeyID: "mallory", Sig: base64.StdEncoding.EncodeToString(sig)}}, env.Signatures...)
			return encode(t, env)
		}, "2 signatures"},
		{"no signature", func() []byte {
			env, _ := envelope(t, line)
			env.Signatures = nil
			return encode(t, env)
		}, "0 signatures"},
		{"payloadType swapped", func() []byte {
			env, _ := envelope(t, line)
			env.PayloadType = "application/json"
			return encode(t, env)
		}, "payloadType"},
		{"payloadType swapped and re-signed by another key", func() []byte {
			_, st := envelope(t, line)
			return resign(t, "application/json", st, otherPriv, "x")
		}, "payloadType"},
		{"truncated", func() []byte { return line[:len(line)/2] }, "not a DSSE envelope"},
		{"garbled base64", func() []byte {
			env, _ := envelope(t, line)
			env.Payload = "%%%" + env.Payload[3:]
			return encode(t, env)
		}, "does not verify"},
		{"an extra field beside the signed ones", func() []byte {
			return append(bytes.TrimSuffix(line, []byte("}")), []byte(`,"note":"trust me"}`)...)
		}, "unknown field"},
		{"the payloadType twice", func() []byte {
			return append([]byte(`{"payloadType":"x",`), line[1:]...)
		}, "duplicate"},
		{"not JSON", func() []byte { return []byte("hello") }, "not a DSSE envelope"},
		{"over the size bound", func() []byte { return bytes.Repeat([]byte(" "), attest.MaxEnvelopeBytes+1) }, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := attest.Verify(context.Background(), tc.line(), keys)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestForgedStatements are statements signed by the trusted key that Bumper's serve
// never writes (a key that once signed something else, or a bug): refused all the same.
func TestForgedStatements(t *testing.T) {
	pemKey, _ := attest.GenerateKey()
	s, _ := attest.NewSigner(pemKey)
	priv := privateOf(t, pemKey)
	keys := []attest.PublicKey{s.PublicKey()}
	line := sign(t, s)
	for _, tc := range []struct {
		name string
		edit func(st map[string]any)
		want string
	}{
		{"the right digest under another name", func(st map[string]any) {
			st["subject"].([]any)[1].(map[string]any)["name"] = "other.json"
		}, "second subject"},
		{"a third subject", func(st map[string]any) {
			subs := st["subject"].([]any)
			st["subject"] = append(subs, subs[1])
		}, "3 subjects"},
		{"the commit subject with a second digest", func(st map[string]any) {
			st["subject"].([]any)[0].(map[string]any)["digest"].(map[string]any)["sha1"] = head
		}, "not a commit"},
		{"the commit subject of another repository", func(st map[string]any) {
			st["subject"].([]any)[0].(map[string]any)["name"] = "evil/widgets"
		}, "not the work item's repository"},
		{"another predicate type", func(st map[string]any) {
			st["predicateType"] = "https://slsa.dev/provenance/v1"
		}, "predicateType"},
		{"another statement type", func(st map[string]any) {
			st["_type"] = "https://in-toto.io/Statement/v0.1"
		}, "_type"},
		{"an unknown predicate field", func(st map[string]any) {
			st["predicate"].(map[string]any)["trusted"] = true
		}, "unknown field"},
		{"a verification serve does not know", func(st map[string]any) {
			st["predicate"].(map[string]any)["runner_claims"].(map[string]any)["verification"] = "sure"
		}, "verification"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := envelope(t, line)
			tc.edit(st)
			_, err := attest.Verify(context.Background(), resign(t, attest.PayloadType, st, priv, s.PublicKey().ID()), keys)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	s := newSigner(t)
	got, err := attest.Verify(context.Background(), sign(t, s), []attest.PublicKey{s.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evidenceJSON {
		flipped := bytes.Clone(evidenceJSON)
		flipped[i] ^= 1
		if err := got.CheckEvidence(flipped); err == nil || !strings.Contains(err.Error(), "does not match") {
			t.Fatalf("byte %d flipped: CheckEvidence = %v", i, err)
		}
	}
	if err := got.CheckCommit(other); err == nil || !strings.Contains(err.Error(), "not "+other) {
		t.Errorf("CheckCommit(another head) = %v", err)
	}
	if err := got.CheckCommit("HEAD"); err == nil {
		t.Error("CheckCommit(HEAD) passed")
	}
}

func TestSignRefuses(t *testing.T) {
	s := newSigner(t)
	ctx := context.Background()
	if _, err := s.Sign(ctx, "main", revision.Of(evidenceJSON), predicate()); err == nil {
		t.Error("signed a head that is not a commit id")
	}
	if _, err := s.Sign(ctx, head, "deadbeef", predicate()); err == nil {
		t.Error("signed an evidence digest that is not sha256:")
	}
	p := predicate()
	p.Approval.Approvers = nil
	if _, err := s.Sign(ctx, head, revision.Of(evidenceJSON), p); err == nil || !strings.Contains(err.Error(), "approvers") {
		t.Errorf("signed a run without an approver: %v", err)
	}
}

func TestBundle(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "\n", "empty"},
		{"two envelopes", "{}\n{}\n", "2 envelopes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := attest.ReadBundle([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadBundle = %v, want %q", err, tc.want)
			}
		})
	}
	got, err := attest.ReadBundle([]byte("{\"a\":1}\n"))
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("ReadBundle = %q, %v", got, err)
	}
}

func TestKeys(t *testing.T) {
	pemKey, _ := attest.GenerateKey()
	for _, tc := range []struct {
		name, data, want string
	}{
		{"a private key for the public", string(pemKey), "private key"},
		{"no PEM", "hello", "no PEM PUBLIC KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := attest.ParsePublicKeys([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParsePublicKeys = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := attest.NewSigner([]byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")); err == nil {
		t.Error("NewSigner took an RSA PEM block")
	}
}
