package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/revision"
)

// runnerClaims are the evidence's parts serve signs as the runner's claims: the
// environment, the harness, how the verification of the head ended, and what the
// output gates found.
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
	c.Gates = gateClaims(ev.Gates)
	return c
}

// gateClaims sums the output gates' result per gate for the attestation: block when a
// finding blocked, review when one asks for a person, unavailable when the gate could not
// judge (OSV not answering for the dependencies), pass otherwise. No result (no gate
// ran) claims nothing, which is not a pass.
func gateClaims(r *gates.Result) []wire.GateResult {
	if r == nil {
		return nil
	}
	all := []gates.Gate{gates.GateSecrets, gates.GateProtectedPaths, gates.GateDependencies, gates.GateLinks}
	out := make([]wire.GateResult, 0, len(all))
	for _, g := range all {
		res := wire.GateResult{Gate: string(g), Result: "pass"}
		for _, f := range r.Findings {
			if f.Gate != g {
				continue
			}
			res.Findings++
			switch {
			case f.Action == gates.ActionBlock:
				res.Result = "block"
			case f.Action == gates.ActionReview && res.Result != "block":
				res.Result = "review"
			}
		}
		if g == gates.GateDependencies && r.OSV != nil && !r.OSV.Checked && res.Result == "pass" {
			res.Result = "unavailable"
		}
		out = append(out, res)
	}
	return out
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
