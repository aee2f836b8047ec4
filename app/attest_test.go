package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/revision"
	gogithub "github.com/google/go-github/v66/github"
)

// attestationKeyFile writes a fresh attestation key, mode 0600, as bumper setup does.
func attestationKeyFile(t testing.TB) string {
	t.Helper()
	key, err := attest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "attestation-key.pem")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// publishedKeys reads serve's attestation public keys where a verifier reads them.
func (h *harness) publishedKeys() []attest.PublicKey {
	h.t.Helper()
	resp, err := http.Get(h.hs.URL + attest.KeyPath)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", attest.KeyPath, resp.StatusCode, raw)
	}
	keys, err := attest.ParsePublicKeys(raw)
	if err != nil {
		h.t.Fatalf("serve's published keys: %v\n%s", err, raw)
	}
	return keys
}

func receipt(t *testing.T, code int, body []byte) wire.EvidenceReceipt {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("evidence: status %d %s", code, body)
	}
	var r wire.EvidenceReceipt
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAttestedEvidence: a run that opened its pull request reports its evidence and
// gets back serve's signed statement, which verifies against the key serve publishes:
// about the head serve checked on GitHub, the evidence's digest, the approval from
// serve's record, and the runner's claims named as such.
func TestAttestedEvidence(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, run := h.approved()
	code, granted, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %s", code, body)
	}
	pr, head := h.runnerPull(n, 1, granted.InstallationToken)
	evidence := []byte(`{"schema":"bumper.evidence/v1","outcome":"success"}`)
	claims := &wire.RunnerClaims{Harness: "claude-code", HarnessVersion: "2.0.14", Verification: "passed",
		Gates: []wire.GateResult{{Gate: "secrets", Result: "pass"}}}
	report := wire.Evidence{Digest: ledger.ContentRevision(evidence), ImageDigest: ledger.ContentRevision([]byte("image")),
		CostMicroUSD: 2500, PullRequest: pr, HeadCommit: head, Outcome: "success", Claims: claims}

	t.Run("a head that is not the pull request's gets no statement", func(t *testing.T) {
		lie := report
		lie.HeadCommit = strings.Repeat("ab", 20)
		if code, body := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, lie); code != http.StatusForbidden {
			t.Fatalf("status %d %s, want 403", code, body)
		}
	})
	t.Run("no head, no statement", func(t *testing.T) {
		none := report
		none.PullRequest, none.HeadCommit = 0, ""
		code, body := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, none)
		r := receipt(t, code, body)
		if r.Attestation != "" || !strings.Contains(r.Unattested, "no head commit") {
			t.Fatalf("receipt %+v", r)
		}
	})
	code, raw := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, report)
	r := receipt(t, code, raw)
	if r.Attestation == "" {
		t.Fatalf("no attestation: %s", r.Unattested)
	}
	got, err := attest.Verify(context.Background(), []byte(r.Attestation), h.publishedKeys())
	if err != nil {
		t.Fatalf("serve's statement does not verify against its published key: %v", err)
	}
	if err := got.CheckCommit(head); err != nil {
		t.Error(err)
	}
	if err := got.CheckEvidence(evidence); err != nil {
		t.Error(err)
	}
	p := got.Predicate
	rec := h.record(n)
	if p.WorkItem != rec.ID() || p.Stage != "implement" || p.Attempt != 1 || p.Approval.Revision != granted.Revision ||
		len(p.Approval.Approvers) != 1 || p.Approval.Approvers[0].Login != ghemu.DefaultMaintainer ||
		p.PolicyVersion != rec.PolicyVersion || p.BaseCommit != rec.BaseCommit {
		t.Errorf("serve's part of the predicate: %+v", p)
	}
	if c := p.RunnerClaims; c.Harness.Name != "claude-code" || c.Verification != "passed" || c.CostMicroUSD != 2500 || len(c.Gates) != 1 {
		t.Errorf("the runner's claims: %+v", c)
	}
	if !strings.Contains(h.logs.String(), `"attested"`) {
		t.Error("no audit line for the signature")
	}
	t.Run("the statement is on the head, as the App's check run", func(t *testing.T) {
		list, _, err := h.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(context.Background(), ghemu.DefaultOrg, ghemu.DefaultRepo, head,
			&gogithub.ListCheckRunsOptions{CheckName: gogithub.String(workitem.CheckAttestation)})
		if err != nil || len(list.CheckRuns) != 1 {
			t.Fatalf("%s check runs on the head: %v %v", workitem.CheckAttestation, list, err)
		}
		cr := list.CheckRuns[0]
		if cr.GetApp().GetSlug() != ghemu.DefaultAppSlug || cr.GetConclusion() != "success" ||
			!strings.Contains(cr.GetOutput().GetSummary(), revision.Of([]byte(r.Attestation))) {
			t.Errorf("check run by %q, %s: %s", cr.GetApp().GetSlug(), cr.GetConclusion(), cr.GetOutput().GetSummary())
		}
		// What a reviewer copies from the check run verifies as the artifact's line does.
		text := cr.GetOutput().GetText()
		body := strings.TrimSpace(text[strings.Index(text, "\n")+1 : strings.LastIndex(text, "\n")])
		line, err := attest.ReadBundle([]byte(body))
		if err != nil {
			t.Fatalf("the check run's text is not the statement: %v\n%s", err, text)
		}
		if got, err := attest.Verify(context.Background(), line, h.publishedKeys()); err != nil || got.CheckCommit(head) != nil {
			t.Errorf("the statement on the check run: %v", err)
		}
	})
}

// TestAttestationKeyMode: serve does not start with an attestation key others can read.
func TestAttestationKeyMode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := h.cfg
	cfg.Bumper.AttestationKeyFile = attestationKeyFile(t)
	if err := os.Chmod(cfg.Bumper.AttestationKeyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(h.ctx, cfg, Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("New with a 0644 key = %v, want it refused saying chmod 600", err)
	}
	cfg.Bumper.AttestationKeyFile = filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(cfg.Bumper.AttestationKeyFile, h.e.AppKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(h.ctx, cfg, Options{}); err == nil || !strings.Contains(err.Error(), "Ed25519") {
		t.Fatalf("New with the App's RSA key as the attestation key = %v, want it refused", err)
	}
}
