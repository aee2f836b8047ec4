package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/revision"
)

func TestRunnerClaims(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := &evidence.Evidence{
		Environment: &evidence.Environment{ID: revision.Of([]byte("env"))},
		Harness:     &evidence.Harness{Name: "claude-code", Version: "2.0.14"},
		Phases: []evidence.Phase{
			evidence.NewPhase(evidence.PhaseVerification, at, at, evidence.PhaseFailed),
			evidence.NewPhase(evidence.PhaseVerification, at, at, evidence.PhaseOK),
		},
	}
	got := runnerClaims(ev)
	if got.Verification != "passed" || got.Harness != "claude-code" || got.HarnessVersion != "2.0.14" || got.EnvironmentDigest != ev.Environment.ID {
		t.Errorf("claims %+v", got)
	}
	if got := runnerClaims(&evidence.Evidence{}); got.Verification != "not_run" || got.Gates != nil {
		t.Errorf("no verification and no gate ran: %+v", got)
	}
}

// TestGateClaims: the attestation says per gate what the gates found, a blocking finding
// over a review one, and a dependencies gate that could not ask OSV is unavailable,
// never a pass.
func TestGateClaims(t *testing.T) {
	r := &gates.Result{
		Findings: []gates.Finding{
			{Gate: gates.GateProtectedPaths, File: ".claude/settings.json", Action: gates.ActionReview},
			{Gate: gates.GateSecrets, File: "a.js", Line: 2, Action: gates.ActionReview},
			{Gate: gates.GateSecrets, File: "b.js", Line: 3, Action: gates.ActionBlock},
		},
		OSV: &gates.OSV{URL: "https://osv.example", Error: "connection refused"},
	}
	got := gateClaims(r)
	want := []wire.GateResult{{Gate: "secrets", Result: "block", Findings: 2}, {Gate: "protected_paths", Result: "review", Findings: 1},
		{Gate: "dependencies", Result: "unavailable"}, {Gate: "links", Result: "pass"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("gateClaims = %+v, want %+v", got, want)
	}
	// What serve signs must pass the predicate's own checks.
	for _, g := range got {
		if !slices.Contains(attest.GateResults, g.Result) {
			t.Errorf("gate %s: result %q is not one the attestation takes", g.Gate, g.Result)
		}
	}
}

func TestKeepAttestation(t *testing.T) {
	line := `{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}`
	for _, tc := range []struct {
		name    string
		receipt wire.EvidenceReceipt
		file    bool
		md      string
		wantErr string
	}{
		{name: "a statement", receipt: wire.EvidenceReceipt{Attestation: line}, file: true, md: revision.Of([]byte(line))},
		{name: "why none", receipt: wire.EvidenceReceipt{Unattested: "no key"}, md: "Not attested:** `no key`"},
		{name: "an older serve", md: "a serve without attestation"},
		{name: "two envelopes", receipt: wire.EvidenceReceipt{Attestation: line + "\n" + line}, wantErr: "not one envelope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			if err := os.WriteFile(filepath.Join(out, EvidenceMarkdownFile), []byte("# evidence\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			note, err := keepAttestation(out, tc.receipt)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			bundle, err := os.ReadFile(filepath.Join(out, attest.BundleFile))
			if tc.file != (err == nil) || (tc.file && string(bundle) != line+"\n") {
				t.Errorf("bundle %q, %v", bundle, err)
			}
			md, _ := os.ReadFile(filepath.Join(out, EvidenceMarkdownFile))
			if !strings.HasPrefix(string(md), "# evidence\n") || !strings.Contains(string(md), tc.md) || !strings.HasSuffix(string(md), note) {
				t.Errorf("evidence.md %q, want %q", md, tc.md)
			}
		})
	}
}
