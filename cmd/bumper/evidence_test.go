package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/revision"
)

const (
	verifyHead  = "0123456789abcdef0123456789abcdef01234567"
	verifyOther = "89abcdef0123456789abcdef0123456789abcdef"
	verifyRepo  = "acme/widgets"
)

// runFiles writes what a run's artifact holds (evidence.json and serve's statement of
// it) into a directory, with serve's public key beside it, and another key.
func runFiles(t *testing.T) (dir, pub, otherPub string) {
	t.Helper()
	dir = t.TempDir()
	evidence := []byte(`{"schema":"bumper.evidence/v1","head_commit":"` + verifyHead + `","outcome":"success"}`)
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	p := attest.Predicate{WorkItem: "acme/widgets#42", Stage: "implement", Attempt: 1,
		Approval:      attest.Approval{Revision: revision.Of([]byte("a")), Approvers: []attest.Approver{{Login: "maintainer", At: at, CommentID: 9}}},
		PolicyVersion: "default", BaseCommit: verifyOther,
		RunnerClaims: attest.Claims{ImageDigest: revision.Of([]byte("i")), Harness: attest.Harness{Name: "command"}, Verification: "passed"},
		AttestedAt:   at}
	signer, other := newTestSigner(t), newTestSigner(t)
	line, err := signer.Sign(context.Background(), verifyHead, revision.Of(evidence), p)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(attest.EvidenceName, evidence)
	write(attest.BundleFile, append(line, '\n'))
	pub = write("serve.pem", attest.EncodePublicKeys([]attest.PublicKey{signer.PublicKey()}))
	otherPub = write("other.pem", attest.EncodePublicKeys([]attest.PublicKey{other.PublicKey()}))
	return dir, pub, otherPub
}

func newTestSigner(t *testing.T) *attest.Signer {
	t.Helper()
	key, err := attest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := attest.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEvidenceVerify(t *testing.T) {
	dir, pub, otherPub := runFiles(t)
	bundle := filepath.Join(dir, attest.BundleFile)
	keys, _ := os.ReadFile(pub)
	serve := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != attest.KeyPath {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(keys)
	}))
	defer serve.Close()

	// An attacker's copies: evidence.json with one byte flipped, a bundle with a second
	// line, another run's evidence.json naming another head.
	flipped, _ := os.ReadFile(filepath.Join(dir, attest.EvidenceName))
	flipped[len(flipped)/2] ^= 1
	flippedPath := filepath.Join(t.TempDir(), "evidence.json")
	_ = os.WriteFile(flippedPath, flipped, 0o644)
	line, _ := os.ReadFile(bundle)
	twice := filepath.Join(t.TempDir(), "twice.jsonl")
	_ = os.WriteFile(twice, append(append([]byte{}, line...), line...), 0o644)
	garbled := filepath.Join(t.TempDir(), "garbled.jsonl")
	_ = os.WriteFile(garbled, line[:len(line)-20], 0o644)
	priv := filepath.Join(t.TempDir(), "attestation-key.pem")
	pk, _ := attest.GenerateKey()
	_ = os.WriteFile(priv, pk, 0o600)

	runCLICases(t, []cliCase{
		{name: "passes with serve's key", args: []string{"evidence", "verify", "--key", pub, bundle}, wantStdout: "ok " + bundle},
		{name: "passes with serve's published key", args: []string{"evidence", "verify", "--url", serve.URL, bundle}, wantStdout: "commit " + verifyHead},
		{name: "passes naming the head", args: []string{"evidence", "verify", "--key", pub, "--head", verifyHead, bundle}, wantStdout: "the runner's claims"},
		{name: "says what it did not check", args: []string{"evidence", "verify", "--key", pub, bundle}, wantStdout: "not checked: the commit is evidence.json's own"},
		{name: "passes naming the repository", args: []string{"evidence", "verify", "--key", pub, "--head", verifyHead, "--repo", verifyRepo, bundle}, wantStdout: "ok " + bundle},
		{name: "another repository's statement", args: []string{"evidence", "verify", "--key", pub, "--repo", "evil/widgets", bundle}, wantCode: 1,
			wantStdout: "not one of evil/widgets"},
		{name: "a byte of the evidence flipped", args: []string{"evidence", "verify", "--key", pub, "--evidence", flippedPath, bundle},
			wantCode: 1, wantStdout: "does not match the statement"},
		{name: "another key", args: []string{"evidence", "verify", "--key", otherPub, bundle}, wantCode: 1, wantStdout: "does not verify"},
		{name: "another head", args: []string{"evidence", "verify", "--key", pub, "--head", verifyOther, bundle}, wantCode: 1,
			wantStdout: "the statement is about commit " + verifyHead + ", not " + verifyOther},
		{name: "two envelopes", args: []string{"evidence", "verify", "--key", pub, "--evidence", filepath.Join(dir, attest.EvidenceName), twice},
			wantCode: 1, wantStdout: "2 envelopes"},
		{name: "truncated", args: []string{"evidence", "verify", "--key", pub, "--evidence", filepath.Join(dir, attest.EvidenceName), garbled},
			wantCode: 1, wantStdout: "not a DSSE envelope"},
		{name: "the private key given as the public", args: []string{"evidence", "verify", "--key", priv, bundle}, wantCode: 1, wantStderr: "private key"},
		{name: "no key", args: []string{"evidence", "verify", bundle}, wantCode: 2, wantStderr: "exactly one of --key PEM and --url SERVE"},
		{name: "both keys", args: []string{"evidence", "verify", "--key", pub, "--url", serve.URL, bundle}, wantCode: 2, wantStderr: "exactly one"},
		{name: "plain http off loopback", args: []string{"evidence", "verify", "--url", "http://serve.example", bundle}, wantCode: 2, wantStderr: "https"},
		{name: "no file", args: []string{"evidence", "verify", "--key", pub}, wantCode: 2, wantStderr: "exactly one FILE"},
		{name: "no subcommand", args: []string{"evidence"}, wantCode: 2, wantStderr: "bumper evidence verify"},
		{name: "in bumper --help", args: []string{"--help"}, wantStdout: "evidence"},
	})
}

func TestEvidenceKeygen(t *testing.T) {
	dir := t.TempDir()
	runCLICases(t, []cliCase{
		{name: "writes the key pair", args: []string{"evidence", "keygen", "--dir", dir}, wantStdout: "mode 0600"},
		{name: "never replaces a key", args: []string{"evidence", "keygen", "--dir", dir}, wantCode: 1, wantStderr: "exists"},
	})
	fi, err := os.Stat(filepath.Join(dir, attestationKeyName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the private key: %v %v", fi, err)
	}
	priv, _ := os.ReadFile(filepath.Join(dir, attestationKeyName))
	pub, _ := os.ReadFile(filepath.Join(dir, attestationPublicKeyName))
	s, err := attest.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := attest.ParsePublicKeys(pub)
	if err != nil || len(keys) != 1 || keys[0].ID() != s.PublicKey().ID() {
		t.Fatalf("the public key file does not hold the key's public half: %v", err)
	}
}
