package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/revision"
)

// runnerClaims are the evidence's parts serve signs as the runner's claims: the
// environment, the harness, and how the verification of the head ended. The output
// gates' results join them once the runner has gates (wire.RunnerClaims.Gates).
func runnerClaims(ev *evidence.Evidence) *wire.RunnerClaims {
	c := &wire.RunnerClaims{Verification: "not_run"}
	if ev.Environment != nil {
		c.EnvironmentDigest = ev.Environment.ID
	}
	if ev.Harness != nil {
		c.Harness, c.HarnessVersion = ev.Harness.Name, ev.Harness.Version
	}
	for _, ph := range ev.Phases {
		if ph.Name != evidence.PhaseVerification {
			continue
		}
		// The last verification is the one of the head the run published.
		switch ph.Outcome {
		case evidence.PhaseOK:
			c.Verification = "passed"
		case evidence.PhaseFailed, evidence.PhaseTimedOut:
			c.Verification = "failed"
		default:
			c.Verification = "not_run"
		}
	}
	return c
}

// keepAttestation writes serve's statement of the run to Out as attest.BundleFile and
// names it, with its digest, at the end of evidence.md; a run serve did not attest says
// why there instead. It returns that line (evidencemd.Attestation), for the job summary.
func keepAttestation(out string, r wire.EvidenceReceipt) (string, error) {
	digest, why := "", r.Unattested
	if r.Attestation != "" {
		if _, err := attest.ReadBundle([]byte(r.Attestation)); err != nil {
			return "", fmt.Errorf("serve's statement is not one envelope: %w", err)
		}
		if err := os.WriteFile(filepath.Join(out, attest.BundleFile), []byte(r.Attestation+"\n"), 0o640); err != nil {
			return "", fmt.Errorf("failed to write %s: %w", attest.BundleFile, err)
		}
		digest = revision.Of([]byte(r.Attestation))
	} else if why == "" {
		why = "serve signed no statement (a serve without attestation)"
	}
	note := evidencemd.Attestation(digest, why)
	f, err := os.OpenFile(filepath.Join(out, EvidenceMarkdownFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return note, fmt.Errorf("failed to name the statement in %s: %w", EvidenceMarkdownFile, err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + note); err != nil {
		return note, fmt.Errorf("failed to name the statement in %s: %w", EvidenceMarkdownFile, err)
	}
	return note, nil
}
