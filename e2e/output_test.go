package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
)

// What leaves the VM (issue #25), end to end: the output gates before the push, the
// bumper/gates check run and its approval, and the commits GitHub signs as the App's.

// tokenBody is the part of the gates-secret scenario's token that must appear in nothing
// Bumper writes.
const tokenBody = "Zq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8"

// fixtureOSV answers OSV's batch query as OSV does, with one advisory: lodash 4.17.15.
func fixtureOSV(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/querybatch" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req struct {
			Queries []struct {
				Package struct{ Name, Ecosystem string }
				Version string
			}
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type vuln struct {
			ID       string `json:"id"`
			Modified string `json:"modified"`
		}
		results := make([]struct {
			Vulns []vuln `json:"vulns,omitempty"`
		}, len(req.Queries))
		for i, q := range req.Queries {
			if q.Package.Ecosystem == "npm" && q.Package.Name == "lodash" && q.Version == "4.17.15" {
				results[i].Vulns = []vuln{{ID: "GHSA-p6mc-m468-83gw", Modified: "2024-01-01T00:00:00Z"}}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// gatesCheck is the latest bumper/gates check run on a commit.
func (w *world) gatesCheck(t *testing.T, head string) *gogithub.CheckRun {
	t.Helper()
	checks, _, err := w.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, head,
		&gogithub.ListCheckRunsOptions{CheckName: gogithub.String("bumper/gates")})
	if err != nil || checks.GetTotal() == 0 {
		t.Fatalf("bumper/gates check runs on %.12s: %+v (%v)", head, checks, err)
	}
	return checks.CheckRuns[0]
}

// TestOutputGates: an agent that adds a token, an install hook, a dependency with a
// known advisory, a change to the agents' configuration and an image from outside. The
// token blocks: nothing is pushed, the work is in the artifact as a bundle, and the
// token is masked in everything Bumper wrote. Without the token the rest are review
// findings: the work is pushed, bumper/gates fails listing them, and the maintainer's
// approving review of that head turns it green.
func TestOutputGates(t *testing.T) {
	w := newWorld(t, options{runnerEnv: []string{"BUMPER_OSV_URL=" + fixtureOSV(t).URL}})
	t.Run("a secret blocks the push", func(t *testing.T) {
		r := w.runIssue("Count to 4", "test.sh wants 4 widgets.\n\nscenario: gates-secret", "failure")
		if rec := w.record(r.issue); rec.State != ledger.Failed || !strings.Contains(rec.Reason, "secrets at config.js:2") {
			t.Fatalf("after the blocked run the item is %s: %s", rec.State, rec.Reason)
		}
		if _, _, err := w.user(ghemu.DefaultMaintainer).Git.GetRef(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "heads/bumper/1-1"); err == nil {
			t.Fatal("a blocked run pushed its branch")
		}
		if prs, _, _ := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, nil); len(prs) != 0 {
			t.Fatalf("a blocked run opened %d pull request(s)", len(prs))
		}
		if _, err := os.Stat(filepath.Join(r.out, "work.bundle")); err != nil {
			t.Errorf("the blocked work is not in the artifact: %v", err)
		}
		// The token in config.js and in the decision ledger Bumper would post.
		if r.ev.Gates == nil || len(r.ev.Gates.Blocking()) != 2 {
			t.Fatalf("the evidence's gates: %+v", r.ev.Gates)
		}
		if strings.Contains(readAll(t, r.out), tokenBody) || strings.Contains(r.log, tokenBody) || strings.Contains(w.record(r.issue).Reason, tokenBody) {
			t.Fatal("the token is in the artifact, the job log or the status comment")
		}
		for _, c := range w.botComments(t, r.issue) {
			if strings.Contains(c, tokenBody) {
				t.Fatalf("the token is in a comment of the App's: %s", c)
			}
		}
	})
	t.Run("review findings wait for a person", func(t *testing.T) {
		r := w.runIssue("Count to 4 again", "test.sh wants 4 widgets.\n\nscenario: gates", "success")
		head := r.ev.HeadCommit
		var got []string
		for _, f := range r.ev.Gates.Findings {
			got = append(got, string(f.Action)+" "+string(f.Gate)+" "+f.File)
		}
		for _, want := range []string{"review protected_paths .claude/settings.json", "review protected_paths package.json",
			"review dependencies package.json", "review links README.md"} {
			if !strings.Contains(strings.Join(got, "\n"), want) {
				t.Errorf("the gates' findings lack %q: %q", want, got)
			}
		}
		if len(r.ev.Gates.Blocking()) != 0 {
			t.Fatalf("a blocking finding without a secret: %q", got)
		}
		c := w.gatesCheck(t, head)
		if c.GetConclusion() != "failure" || !strings.Contains(c.GetOutput().GetSummary()+c.GetOutput().GetText(), ".claude/settings.json") {
			t.Fatalf("bumper/gates on the head: %s %q %q", c.GetConclusion(), c.GetOutput().GetSummary(), c.GetOutput().GetText())
		}
		w.review(t, ghemu.DefaultReader, r.ev.PullRequest, "APPROVE", "")
		if c := w.gatesCheck(t, head); c.GetConclusion() != "failure" {
			t.Fatalf("a reader's approval cleared bumper/gates: %s", c.GetConclusion())
		}
		w.review(t, ghemu.DefaultMaintainer, r.ev.PullRequest, "APPROVE", "")
		if c := w.gatesCheck(t, head); c.GetConclusion() != "success" || !strings.Contains(c.GetOutput().GetSummary()+c.GetOutput().GetText(), ghemu.DefaultMaintainer) {
			t.Fatalf("after the maintainer's approval bumper/gates is %s: %q", c.GetConclusion(), c.GetOutput().GetSummary())
		}
	})
}

// TestSignedCommits: under a rule that requires signed commits, Bumper's pull request
// holds only commits GitHub verified as the App's, and a person can merge it; the same
// change pushed as unsigned commits cannot be merged.
func TestSignedCommits(t *testing.T) {
	w := newWorld(t)
	if err := w.e.SetBranchProtection(ghemu.DefaultOrg, ghemu.DefaultRepo, ghemu.SeedProtection{Branch: "main",
		RequiredSignatures: true}); err != nil {
		t.Fatal(err)
	}
	r := w.runIssue("Count to 4", "test.sh wants 4 widgets.\n\nscenario: fix", "success")
	maint := w.user(ghemu.DefaultMaintainer)
	// The pull request's commits, from its head back to the base commit.
	seen := 0
	for sha := r.ev.HeadCommit; sha != r.ev.BaseCommit; {
		c, _, err := maint.Repositories.GetCommit(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, sha, nil)
		if err != nil || len(c.Parents) == 0 || seen > 20 {
			t.Fatalf("walking the pull request's commits at %.12s: %v", sha, err)
		}
		if v := c.GetCommit().GetVerification(); !v.GetVerified() || v.GetReason() != "valid" {
			t.Errorf("commit %.12s is not verified: %+v", sha, v)
		}
		sha, seen = c.Parents[0].GetSHA(), seen+1
	}
	if seen == 0 {
		t.Fatal("the pull request has no commit")
	}
	if r.ev.PublishedVia != "api" {
		t.Errorf("the evidence says the head was published by %q", r.ev.PublishedVia)
	}
	// The head holds serve's signed statement of the run, as the App's check run.
	checks, _, err := maint.Checks.ListCheckRunsForRef(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.ev.HeadCommit,
		&gogithub.ListCheckRunsOptions{CheckName: gogithub.String(workitem.CheckAttestation)})
	if err != nil || len(checks.CheckRuns) != 1 {
		t.Fatalf("the head's %s check runs: %v %v", workitem.CheckAttestation, checks, err)
	}
	if s := checks.CheckRuns[0].GetOutput().GetText(); !strings.Contains(s, "application/vnd.in-toto+json") {
		t.Errorf("the %s check run does not hold the statement:\n%s", workitem.CheckAttestation, s)
	}
	// The same change, pushed unsigned by a person.
	if _, _, err := maint.Git.CreateRef(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.Reference{Ref: gogithub.String("refs/heads/by-hand"),
		Object: &gogithub.GitObject{SHA: gogithub.String(r.ev.BaseCommit)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.e.PushCommit(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "by-hand",
		map[string][]byte{"widgets.sh": []byte("#!/bin/sh\n# Prints the widget count.\necho 4\n")}, "Count to 4", ghemu.DefaultMaintainer); err != nil {
		t.Fatal(err)
	}
	unsigned, _, err := maint.PullRequests.Create(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.NewPullRequest{Title: gogithub.String("By hand"),
		Head: gogithub.String("by-hand"), Base: gogithub.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	w.settle()
	if _, _, err := maint.PullRequests.Merge(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, unsigned.GetNumber(), "", nil); err == nil ||
		!strings.Contains(err.Error(), "verified signatures") {
		t.Fatalf("a pull request of unsigned commits under required signatures: merge = %v", err)
	}
	if _, _, err := maint.PullRequests.Merge(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.ev.PullRequest, "", nil); err != nil {
		t.Fatalf("the maintainer cannot merge Bumper's verified pull request: %v", err)
	}
}
