package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// withEnvironment adds an environment: section to the seed's policy and its files.
func withEnvironment(section string, files map[string]string) options {
	return options{ownImages: true, files: func(f map[string]string) {
		f[".github/bumper.yml"] += section
		for name, content := range files {
			f[name] = content
		}
	}}
}

// TestEnvironmentSetupRefused: a setup that reaches a host off environment.allow fails
// the run at its environment phase, before any VM of the run boots: the item fails with
// the firewall's refusal, the setup's output and audit log are in the artifact and named
// by the evidence, nothing is cached, and no pull request is opened.
func TestEnvironmentSetupRefused(t *testing.T) {
	w := newWorld(t, withEnvironment("environment:\n  setup: scripts/env-setup.sh\n  allow: [proxy.golang.org]\n", map[string]string{
		"scripts/env-setup.sh": "#!/bin/sh\nset -eu\necho 'setup: fetching the toolchain'\ngit ls-remote https://example.com/toolchain.git\n",
	}))
	r := w.runIssue("Count to 4", "test.sh wants 4 widgets.\n\nscenario: fix", "failure")
	out, ev, n := r.out, r.ev, r.issue
	if err := ev.Validate(); err != nil {
		t.Fatalf("evidence.json does not validate: %v", err)
	}
	var envPhase *evidence.Phase
	for i, p := range ev.Phases {
		if p.Name == evidence.PhaseEnvironment {
			envPhase = &ev.Phases[i]
		}
		if p.Name == evidence.PhaseBoot || p.Name == evidence.PhaseAgent {
			t.Errorf("phase %s ran after the environment failed", p.Name)
		}
	}
	if envPhase == nil || envPhase.Outcome != evidence.PhaseFailed || !strings.Contains(envPhase.Detail, "example.com:443") {
		t.Fatalf("environment phase %+v", envPhase)
	}
	env := ev.Environment
	if env == nil || env.ID == "" || env.ImageDigest != "" || !env.Built && env.SetupMS == 0 || env.Log != "environment.log" || env.AuditLog != "environment-audit.jsonl" || ev.Sandbox != nil {
		t.Fatalf("evidence: environment %+v, sandbox %+v", env, ev.Sandbox)
	}
	if setupLog, _ := os.ReadFile(filepath.Join(out, env.Log)); !strings.Contains(string(setupLog), "setup: fetching the toolchain") {
		t.Fatalf("the setup's log:\n%s", setupLog)
	}
	f, err := os.Open(filepath.Join(out, env.AuditLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f, ""); err != nil {
		t.Fatalf("the setup's audit log does not verify: %v", err)
	}
	refused := false
	for _, e := range readAuditLines(t, filepath.Join(out, env.AuditLog)) {
		refused = refused || e.Target == "example.com:443" && !e.Allowed
	}
	if !refused {
		t.Fatal("the setup's audit log does not hold the refusal of example.com:443")
	}
	if _, found := image.FindDerived(filepath.Join(imagetest.CacheDir(), "images"), env.ID); found {
		t.Fatal("the failed setup's environment was cached")
	}
	rec := w.record(n)
	t.Logf("the item's reason: %s", rec.Reason)
	if rec.State != ledger.Failed || !strings.Contains(rec.Reason, "environment") || !strings.Contains(rec.Reason, "refused example.com:443") {
		t.Fatalf("record %s: %q", rec.State, rec.Reason)
	}
	prs, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.PullRequestListOptions{State: "all"})
	if err != nil || len(prs) != 0 || !ev.Revocation.Revoked {
		t.Fatalf("%d pull requests (%v); token revoked %v", len(prs), err, ev.Revocation.Revoked)
	}
}
