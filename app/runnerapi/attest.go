package runnerapi

import (
	"context"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/attest"
)

// Attester signs runs' statements: serve's attestation key, and the public keys it
// publishes at attest.KeyPath (the signing key's first, then those kept from before a
// rotation, for bundles signed earlier).
type Attester struct {
	signer *attest.Signer
	keys   []byte
}

// NewAttester wraps serve's attestation key and the public keys it still publishes.
func NewAttester(s *attest.Signer, previous []attest.PublicKey) *Attester {
	keys := append([]attest.PublicKey{s.PublicKey()}, previous...)
	return &Attester{signer: s, keys: attest.EncodePublicKeys(keys)}
}

// WithAttester makes the evidence call-back answer with the run's signed statement and
// publishes the public keys; without one, serve attests nothing and says so.
func (h *Handler) WithAttester(a *Attester) *Handler {
	h.attester = a
	return h
}

// evidence records a run's evidence and answers its attestation (wire.EvidenceReceipt).
// Serve signs the head and the approval from its own record; what only the runner knows
// goes in as the runner's claims. Once the evidence is recorded the report has
// succeeded: a statement serve cannot sign is answered as why, never as a refusal.
func (h *Handler) evidence(ctx context.Context, c wire.RunClaims, body []byte) (any, error) {
	var e wire.Evidence
	if err := decode(body, &e); err != nil {
		return nil, err
	}
	a, err := h.ledger.ReportEvidence(ctx, c, e)
	if err != nil {
		return nil, err
	}
	if h.attester == nil {
		return wire.EvidenceReceipt{Unattested: "serve has no attestation key (bumper.attestation_key_file)"}, nil
	}
	if a.Head == "" {
		return wire.EvidenceReceipt{Unattested: a.Why}, nil
	}
	p := a.Predicate
	p.RunnerClaims = claimsOf(e)
	p.AttestedAt = h.tokens.now()
	line, err := h.attester.signer.Sign(ctx, a.Head, e.Digest, p)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str(logkey.WorkItem, c.WorkItem.String()).Msg("did not attest a run")
		return wire.EvidenceReceipt{Unattested: err.Error()}, nil
	}
	zerolog.Ctx(ctx).Info().Str(logkey.Audit, "attested").Str(logkey.WorkItem, c.WorkItem.String()).
		Int(logkey.Attempt, c.Attempt).Msg("signed the run's statement")
	// The statement is the run's whether or not GitHub takes its check run: the runner
	// keeps it, and the artifact is where verification reads it.
	if err := h.ledger.PublishAttestation(ctx, c, a.Head, line); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str(logkey.WorkItem, c.WorkItem.String()).Msg("failed to post the statement on the head")
	}
	return wire.EvidenceReceipt{Attestation: string(line)}, nil
}

// claimsOf is the runner's report as the predicate's runner claims.
func claimsOf(e wire.Evidence) attest.Claims {
	cl := attest.Claims{ImageDigest: e.ImageDigest, CostMicroUSD: e.CostMicroUSD, Verification: "not_run"}
	if rc := e.Claims; rc != nil {
		cl.EnvironmentDigest, cl.Verification = rc.EnvironmentDigest, rc.Verification
		cl.Harness = attest.Harness{Name: rc.Harness, Version: rc.HarnessVersion}
		for _, g := range rc.Gates {
			cl.Gates = append(cl.Gates, attest.Gate{Gate: g.Gate, Result: g.Result, Findings: g.Findings})
		}
	}
	return cl
}

// publicKeys answers serve's attestation public keys as PEM: what `bumper evidence
// verify --url` and `bumper setup` read.
func (h *Handler) publicKeys(w http.ResponseWriter, _ *http.Request) {
	if h.attester == nil {
		writeError(w, http.StatusNotFound, "this serve has no attestation key (bumper.attestation_key_file)")
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(h.attester.keys)
}
