package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// runnerToken fetches a run's OIDC token the way a runner does, from
// ACTIONS_ID_TOKEN_REQUEST_URL with ACTIONS_ID_TOKEN_REQUEST_TOKEN.
func (h *harness) runnerToken(run ghemu.RunInfo) string {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, run.OIDCRequestURL+"?audience="+wire.OIDCAudience, nil)
	req.Header.Set("Authorization", "Bearer "+run.OIDCRequestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Value string `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Value == "" {
		h.t.Fatalf("no ID token (status %d): %v", resp.StatusCode, err)
	}
	return out.Value
}

// post sends a JSON body to serve and returns the status and body.
func (h *harness) post(method, path, bearer string, body any) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, h.hs.URL+path, rd)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (h *harness) exchange(req wire.ExchangeRequest) (int, wire.ExchangeResponse, string) {
	h.t.Helper()
	code, body := h.post(http.MethodPost, wire.PathTokenExchange, "", req)
	var resp wire.ExchangeResponse
	if code == http.StatusOK {
		if err := json.Unmarshal(body, &resp); err != nil {
			h.t.Fatal(err)
		}
	}
	return code, resp, string(body)
}

// approved labels and approves a fresh issue and returns its number and run.
func (h *harness) approved() (int, ghemu.RunInfo) {
	h.t.Helper()
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	h.comment(ghemu.DefaultMaintainer, n, "/approve")
	h.expectState(n, ledger.Running)
	runs := h.runs()
	return n, runs[len(runs)-1]
}

// runnerPull does what the runner does at the end of a run: it pushes a commit to the
// attempt's work branch and opens the pull request with the run's installation token,
// so the App is its author. It returns the pull request's number and head commit.
func (h *harness) runnerPull(n, attempt int, token string) (int, string) {
	h.t.Helper()
	refs, err := h.e.Git().Refs(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		h.t.Fatal(err)
	}
	branch := fmt.Sprintf("bumper/%d-%d", n, attempt)
	if err := h.e.Git().UpdateRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "refs/heads/"+branch, refs["refs/heads/main"], ""); err != nil {
		h.t.Fatal(err)
	}
	head, err := h.e.Git().CommitFiles(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, branch, refs["refs/heads/main"],
		map[string][]byte{"widgets.sh": []byte("#!/bin/sh\necho 4\n")}, "Count to 4", gitserver.Signature{Name: "Bumper", Email: "bumper@example.test"})
	if err != nil {
		h.t.Fatal(err)
	}
	c := gogithub.NewClient(nil).WithAuthToken(token)
	c.BaseURL = mustURL(h.e.BaseURL() + "/")
	pr, _, err := c.PullRequests.Create(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.NewPullRequest{
		Title: gogithub.String("Count to 4"), Head: gogithub.String(branch), Base: gogithub.String("main"),
		Body: gogithub.String(fmt.Sprintf("Fixes #%d", n))})
	if err != nil {
		h.t.Fatalf("the run's token could not open the pull request: %v", err)
	}
	h.settle()
	return pr.GetNumber(), head
}

func exchangeRequest(h *harness, run ghemu.RunInfo, tok string) wire.ExchangeRequest {
	at, _ := strconv.Atoi(run.Inputs["attempt"])
	return wire.ExchangeRequest{OIDCToken: tok, Nonce: run.Inputs["nonce"], WorkItem: run.Inputs["work_item"], Attempt: at}
}

func TestTokenExchange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, run := h.approved()
	repo := ghemu.DefaultOrg + "/" + ghemu.DefaultRepo
	wf := repo + "/.github/workflows/" + ghemu.DefaultWorkflow + "@refs/heads/main"
	mint := func(c ghemu.OIDCClaims) string {
		if c.Audience == "" {
			c.Audience = wire.OIDCAudience
		}
		if c.Ref == "" {
			c.Ref = "refs/heads/main"
		}
		if c.RunID == "" {
			c.RunID = strconv.FormatInt(run.ID, 10)
		}
		tok, err := h.e.MintOIDCToken(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// kind is the refusal's metric label. An attacker names their workflow, branch or
	// repository after another kind's words ("nonce"), to pass a forged token off as a
	// replay: the label must stay the kind of the check that failed.
	refusals := []struct {
		name string
		req  func() wire.ExchangeRequest
		want string
		kind workitem.RefusalKind
	}{
		{"wrong repository", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: "acme/other", WorkflowRef: "acme/other/.github/workflows/bumper-run.yml@refs/heads/main"}))
		}, "not acme/widgets", workitem.RefusalIdentity},
		{"wrong repository, named for a nonce", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: "acme/nonce", WorkflowRef: "acme/nonce/.github/workflows/bumper-run.yml@refs/heads/main"}))
		}, "for repository acme/nonce", workitem.RefusalIdentity},
		{"wrong workflow", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: repo + "/.github/workflows/ci.yml@refs/heads/main"}))
		}, "not Bumper's runner workflow", workitem.RefusalIdentity},
		{"wrong workflow, named for a nonce", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: repo + "/.github/workflows/nonce.yml@refs/heads/main"}))
		}, "workflows/nonce.yml", workitem.RefusalIdentity},
		{"wrong ref", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf, Ref: "refs/heads/evil"}))
		}, "refs/heads/evil", workitem.RefusalIdentity},
		{"wrong ref, named for a nonce", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf, Ref: "refs/heads/nonce-reuse"}))
		}, "refs/heads/nonce-reuse", workitem.RefusalIdentity},
		{"expired", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf,
				IssuedAt: time.Now().Add(-time.Hour), TTL: 5 * time.Minute}))
		}, "expired", workitem.RefusalOIDC},
		{"wrong audience", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Audience: "sts.amazonaws.com", Repository: repo, WorkflowRef: wf}))
		}, "audience", workitem.RefusalOIDC},
		{"wrong nonce", func() wire.ExchangeRequest {
			r := exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf}))
			r.Nonce = strings.Repeat("0", 64)
			return r
		}, "nonce does not match", workitem.RefusalNonce},
		{"other run", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf, RunID: "1"}))
		}, "not the run dispatched", workitem.RefusalIdentity},
		{"wrong attempt", func() wire.ExchangeRequest {
			r := exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf}))
			r.Attempt = 2
			return r
		}, "not the current attempt", workitem.RefusalAttempt},
		{"not a dispatched run", func() wire.ExchangeRequest {
			return exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf, EventName: "push"}))
		}, "not by Bumper's workflow_dispatch", workitem.RefusalIdentity},
		{"no token", func() wire.ExchangeRequest { return exchangeRequest(h, run, "") }, "no OIDC token", workitem.RefusalOIDC},
		{"no work item", func() wire.ExchangeRequest {
			r := exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf}))
			r.WorkItem = repo
			return r
		}, "want owner/repo#issue", workitem.RefusalBadRequest},
		{"an issue without a work item", func() wire.ExchangeRequest {
			r := exchangeRequest(h, run, mint(ghemu.OIDCClaims{Repository: repo, WorkflowRef: wf}))
			r.WorkItem = fmt.Sprintf("%s#%d", repo, h.openIssue("Unrelated", "Not for Bumper."))
			return r
		}, "has no work item", workitem.RefusalUnknownItem},
	}
	for _, tt := range refusals {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			before := h.refused(tt.kind)
			code, _, body := h.exchange(tt.req())
			if code != http.StatusForbidden || !strings.Contains(body, tt.want) {
				t.Fatalf("status %d body %s, want 403 containing %q", code, body, tt.want)
			}
			if got := h.refused(tt.kind); got != before+1 {
				t.Fatalf("refusals labelled %q went from %v to %v, want one more", tt.kind, before, got)
			}
			audited := false
			for _, line := range strings.Split(h.logs.String(), "\n") {
				if strings.Contains(line, `"audit":"refused"`) && strings.Contains(line, jsonString(tt.want)) {
					audited = true
				}
			}
			if !audited {
				t.Fatalf("no audit line for the refusal %q", tt.want)
			}
		})
	}
	var granted wire.ExchangeResponse
	t.Run("happy path", func(t *testing.T) {
		code, resp, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		if resp.WorkItem.String() != fmt.Sprintf("%s#%d", repo, n) || resp.Attempt != 1 || resp.Stage != "implement" ||
			resp.RunToken == "" || resp.Permissions["contents"] != "write" || len(resp.Permissions) != 4 {
			t.Fatalf("response %+v", resp)
		}
		if resp.BaseBranch != "main" || !strings.HasSuffix(resp.BotLogin, "[bot]") || len(resp.Approvals) != 1 ||
			resp.Approvals[0].Revision != resp.Revision || resp.Approvals[0].CommentID == 0 || resp.Approvals[0].By == "" {
			t.Fatalf("base branch %q, bot %q, approvals %+v", resp.BaseBranch, resp.BotLogin, resp.Approvals)
		}
		if d := time.Until(resp.RunTokenExpiresAt); d < 29*time.Minute || d > 31*time.Minute {
			t.Fatalf("run token lives %v", d)
		}
		// The installation token works, for this repository only.
		c := gogithub.NewClient(nil).WithAuthToken(resp.InstallationToken)
		c.BaseURL = mustURL(h.e.BaseURL() + "/")
		if _, _, err := c.Repositories.Get(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo); err != nil {
			t.Fatalf("the minted token cannot read the repository: %v", err)
		}
		if r := h.record(n); !r.Attempts[0].NonceUsed {
			t.Fatal("the record does not mark the nonce used")
		}
		granted = resp
	})
	t.Run("replay refused", func(t *testing.T) {
		before := h.refused(workitem.RefusalNonce)
		code, _, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
		if code != http.StatusForbidden || !strings.Contains(body, "already used") {
			t.Fatalf("status %d body %s", code, body)
		}
		if got := h.refused(workitem.RefusalNonce); got != before+1 {
			t.Fatalf("nonce refusals went from %v to %v, want one more", before, got)
		}
	})
	t.Run("call-backs need the run token", func(t *testing.T) {
		for _, bearer := range []string{"", "not-a-token", h.runnerToken(run)} {
			if code, body := h.post(http.MethodGet, wire.PathShouldStop, bearer, nil); code != http.StatusForbidden {
				t.Fatalf("bearer %.10q: status %d %s", bearer, code, body)
			}
		}
		code, body := h.post(http.MethodGet, wire.PathShouldStop, granted.RunToken, nil)
		if code != http.StatusOK || !strings.Contains(string(body), `"stop":false`) {
			t.Fatalf("should-stop: %d %s", code, body)
		}
	})
	t.Run("progress and evidence move the item", func(t *testing.T) {
		pr, head := h.runnerPull(n, 1, granted.InstallationToken)
		digest, auditHead := ledger.ContentRevision([]byte("evidence")), ledger.ContentRevision([]byte("audit"))
		steps := []struct {
			path string
			body any
			want ledger.State
			code int
		}{
			{wire.PathProgress, wire.Progress{State: "in-review", PullRequest: pr + 100, HeadCommit: head}, ledger.Running, http.StatusForbidden},
			{wire.PathProgress, wire.Progress{State: "verifying"}, ledger.Verifying, http.StatusNoContent},
			{wire.PathEvidence, wire.Evidence{Digest: "sha256:abc", CostMicroUSD: 1500}, ledger.Verifying, http.StatusForbidden},
			{wire.PathEvidence, wire.Evidence{Digest: digest, CostMicroUSD: 1500, AuditHead: "sha256:head"}, ledger.Verifying, http.StatusForbidden},
			{wire.PathEvidence, wire.Evidence{Digest: digest, CostMicroUSD: 1500, AuditHead: auditHead}, ledger.Verifying, http.StatusOK},
			{wire.PathVerdict, wire.Verdict{Document: approveVerdict}, ledger.Verifying, http.StatusForbidden},
			{wire.PathProgress, wire.Progress{State: "reviewing"}, ledger.Verifying, http.StatusForbidden},
			{wire.PathProgress, wire.Progress{State: "reviewing", PullRequest: pr, HeadCommit: head}, ledger.Reviewing, http.StatusNoContent},
			{wire.PathProgress, wire.Progress{State: "in-review", PullRequest: pr, HeadCommit: head}, ledger.Reviewing, http.StatusForbidden},
		}
		for i, st := range steps {
			code, body := h.post(http.MethodPost, st.path, granted.RunToken, st.body)
			if code != st.code {
				t.Fatalf("step %d %s: status %d %s, want %d", i, st.path, code, body, st.code)
			}
			h.settle()
			h.expectState(n, st.want)
		}
		r := h.record(n)
		if r.Attempts[0].EvidenceDigest != digest || r.AuditHead != auditHead || r.PullRequest != pr || r.Attempts[0].HeadCommit != head {
			t.Fatalf("evidence not recorded: %+v", r)
		}
		// The pull request is handed to a review run: the implement run's part is over.
		if len(r.Attempts) != 2 || r.Attempts[1].Stage != workitem.StageReview || r.Attempts[1].RunID == 0 {
			t.Fatalf("no review run was dispatched: %+v", r.Attempts)
		}
		code, body := h.post(http.MethodGet, wire.PathShouldStop, granted.RunToken, nil)
		if code != http.StatusOK || !strings.Contains(string(body), `"stop":true`) {
			t.Fatalf("should-stop of the implement run once its review run is dispatched: %d %s", code, body)
		}
		h.comment(ghemu.DefaultMaintainer, n, "/stop")
		h.expectState(n, ledger.Stopped)
	})
}

// TestBaseMovedVoidsApproval: the base branch moves between /approve and the token
// exchange; the exchange is refused and the item goes back to awaiting approval.
func TestBaseMovedVoidsApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, run := h.approved()
	refs, err := h.e.Git().Refs(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Git().CommitFiles(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "main", refs["refs/heads/main"],
		map[string][]byte{"NEWS": []byte("moved\n")}, "Move main", gitserver.Signature{Name: "M", Email: "m@example.test"}); err != nil {
		t.Fatal(err)
	}
	code, _, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusForbidden || !strings.Contains(body, "base branch main moved") {
		t.Fatalf("status %d body %s", code, body)
	}
	if got := h.refused(workitem.RefusalApproval); got != 1 {
		t.Fatalf("%v refusals labelled approval, want 1", got)
	}
	h.settle()
	r := h.expectState(n, ledger.AwaitingApproval)
	if r.ActiveApproval() != nil || r.Attempts[0].Outcome != "voided" {
		t.Fatalf("record %+v", r)
	}
	replies := h.botReplies(n)
	if len(replies) == 0 || !strings.Contains(replies[len(replies)-1], "no longer holds") {
		t.Fatalf("bot did not say why: %q", replies)
	}
}

// refused is how many token exchanges serve's /metrics counts as refused with kind.
func (h *harness) refused(kind workitem.RefusalKind) float64 {
	h.t.Helper()
	n, _ := sample(scrape(h.t, h.hs.URL), "bumper_token_exchanges_total", map[string]string{"outcome": "refused", "reason": string(kind)})
	return n
}

// jsonString is s as it appears inside a JSON string.
func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw[1 : len(raw)-1])
}

// TestExchangeNotInstalled: a valid OIDC token from a repository the App is not
// installed on is refused, not an error.
func TestExchangeNotInstalled(t *testing.T) {
	seed := ghemu.DefaultSeed()
	seed.Organizations = append(seed.Organizations, "elsewhere")
	seed.Repositories = append(seed.Repositories, ghemu.SeedRepository{Owner: "elsewhere", Name: "tool",
		DefaultBranch: "main", Files: map[string]string{"README.md": "# tool\n"}})
	h := newHarness(t, seed)
	tok, err := h.e.MintOIDCToken(ghemu.OIDCClaims{Audience: wire.OIDCAudience, Repository: "elsewhere/tool",
		WorkflowRef: "elsewhere/tool/.github/workflows/bumper-run.yml@refs/heads/main", Ref: "refs/heads/main", RunID: "5"})
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := h.exchange(wire.ExchangeRequest{OIDCToken: tok, Nonce: "n", WorkItem: "elsewhere/tool#1", Attempt: 1})
	if code != http.StatusForbidden || !strings.Contains(body, "not installed") {
		t.Fatalf("status %d body %s", code, body)
	}
	if got := h.refused(workitem.RefusalUnknownItem); got != 1 {
		t.Fatalf("%v refusals labelled unknown_item, want 1", got)
	}
}

// TestRunReasonReachesTheItem: a runner that fails says why in its evidence report; when
// its workflow run completes, the item fails with that reason, shown as text. Reports
// with an outcome the App does not know, or an oversized reason, are refused.
func TestRunReasonReachesTheItem(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, run := h.approved()
	code, granted, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %s", code, body)
	}
	digest := ledger.ContentRevision([]byte("evidence"))
	refused := []wire.Evidence{
		{Digest: digest, Outcome: "succeeded-honestly"},
		{Digest: digest, Outcome: "failure", Reason: strings.Repeat("x", wire.MaxReason+1)},
	}
	for _, e := range refused {
		if code, body := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, e); code != http.StatusForbidden {
			t.Fatalf("evidence outcome %q, reason of %d bytes: status %d %s, want 403", e.Outcome, len(e.Reason), code, body)
		}
	}
	reason := "the run's model budget of $0.50 is spent: 3 calls refused; see `evidence.json` @octocat [x](https://evil.example)"
	if code, body := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, wire.Evidence{Digest: digest, Outcome: "over_budget", Reason: reason}); code != http.StatusOK {
		t.Fatalf("evidence: %d %s", code, body)
	}
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	r := h.expectState(n, ledger.Failed)
	if !strings.Contains(r.Reason, "ended (over_budget): the runner says ``") || !strings.Contains(r.Reason, "budget of $0.50 is spent") ||
		!strings.Contains(r.Reason, "1 of 3 attempts used") {
		t.Fatalf("reason %q", r.Reason)
	}
	if a := r.Attempts[0]; a.RunOutcome != "over_budget" || a.RunReason != reason || a.EvidenceDigest != digest {
		t.Fatalf("attempt %+v", a)
	}
}

// TestRunThatDeliveredEndsQuietly: the workflow run of an attempt that opened its pull
// request and handed it to review completes; the item stays with its reviewer instead
// of failing "before a pull request was ready". Its token is refreshed while it runs,
// and no longer once the pull request waits for review.
func TestRunThatDeliveredEndsQuietly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, run := h.approved()
	code, granted, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %s", code, body)
	}
	pr, head := h.runnerPull(n, 1, granted.InstallationToken)
	for _, p := range []wire.Progress{{State: "verifying"}, {State: "reviewing", PullRequest: pr, HeadCommit: head}} {
		if code, body := h.post(http.MethodPost, wire.PathRefresh, granted.RunToken, struct{}{}); code != http.StatusOK {
			t.Fatalf("refresh before %s: %d %s", p.State, code, body)
		}
		if code, body := h.post(http.MethodPost, wire.PathProgress, granted.RunToken, p); code != http.StatusNoContent {
			t.Fatalf("progress %s: %d %s", p.State, code, body)
		}
	}
	// The pull request waits for its reviewer: the implement run's token is not renewed.
	if code, body := h.post(http.MethodPost, wire.PathRefresh, granted.RunToken, struct{}{}); code != http.StatusForbidden || !strings.Contains(string(body), "not the current run") {
		t.Fatalf("refresh once reviewing: %d %s", code, body)
	}
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "success"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if r := h.expectState(n, ledger.Reviewing); r.PullRequest != pr || r.Attempts[0].Outcome != "success" {
		t.Fatalf("pull request %d, attempt outcome %q", r.PullRequest, r.Attempts[0].Outcome)
	}
}

// TestDeliveredButFailedRunFails: a run that reports a failure fails its item when its
// workflow completes; and the reason it gives is stored bounded, however it is written.
func TestDeliveredButFailedRunFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, run := h.approved()
	code, granted, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %s", code, body)
	}
	if code, body := h.post(http.MethodPost, wire.PathProgress, granted.RunToken, wire.Progress{State: "verifying"}); code != http.StatusNoContent {
		t.Fatalf("progress verifying: %d %s", code, body)
	}
	reason := strings.Repeat("<", wire.MaxReason)
	e := wire.Evidence{Digest: ledger.ContentRevision([]byte("e")), Outcome: "failure", Reason: reason}
	if code, body := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, e); code != http.StatusOK {
		t.Fatalf("evidence: %d %s", code, body)
	}
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	r := h.expectState(n, ledger.Failed)
	if got := r.Attempts[0].RunReason; len(got) > 310 || !strings.HasPrefix(got, "<<<") {
		t.Fatalf("stored reason of %d bytes", len(got))
	}
}

// approveVerdict is a valid verdict.json that approves with full confidence.
const approveVerdict = `{"schema_version":1,"verdict":"approve","confidence":1,"summary":"Looks right.","findings":[]}`

// TestItemBudget: bounds.cost_per_item_usd holds across a work item's runs. Each run is
// granted the least of its own cap and what the item's budget leaves; a run that
// reports counts its cost, one that never reports (a crash) its whole grant; once the
// item's budget is spent, the next exchange is refused and the item fails, saying how
// much was spent by how many runs.
func TestItemBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.setPolicy("version: 1\nbounds:\n  cost_per_run_usd: 3\n  cost_per_item_usd: 5\n")
	n, run := h.approved()
	fail := func(run ghemu.RunInfo) {
		t.Helper()
		if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
			t.Fatal(err)
		}
		h.settle()
		h.expectState(n, ledger.Failed)
	}
	retry := func() ghemu.RunInfo {
		t.Helper()
		h.comment(ghemu.DefaultMaintainer, n, "/retry")
		h.expectState(n, ledger.AwaitingApproval)
		h.comment(ghemu.DefaultMaintainer, n, "/approve")
		h.expectState(n, ledger.Running)
		runs := h.runs()
		return runs[len(runs)-1]
	}

	// The first run: the run's cap; it reports $2.50 and fails.
	code, granted, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK || granted.BudgetMicroUSD != 3_000_000 {
		t.Fatalf("first exchange: %d budget %d %s", code, granted.BudgetMicroUSD, body)
	}
	report := wire.Evidence{Digest: ledger.ContentRevision([]byte("evidence")), CostMicroUSD: 2_500_000, Outcome: "failure", Reason: "the tests failed"}
	if code, body := h.post(http.MethodPost, wire.PathEvidence, granted.RunToken, report); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	fail(run)

	// The retry: what the item leaves, $2.50; it crashes without a report.
	run = retry()
	code, granted, body = h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK || granted.BudgetMicroUSD != 2_500_000 {
		t.Fatalf("second exchange: %d budget %d %s", code, granted.BudgetMicroUSD, body)
	}
	fail(run)

	// The third: the crashed run counts its whole grant, so nothing is left.
	run = retry()
	code, _, body = h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code == http.StatusOK || !strings.Contains(body, "model budget is spent") {
		t.Fatalf("third exchange: %d %s, want a refusal", code, body)
	}
	r := h.expectState(n, ledger.Failed)
	if !strings.Contains(r.Reason, "$5.00 of bounds.cost_per_item_usd $5.00, by 2 runs") {
		t.Fatalf("reason %q", r.Reason)
	}
	if got := h.refused(workitem.RefusalBudget); got != 1 {
		t.Fatalf("budget refusals counted %v, want 1", got)
	}
	// The refused run's workflow run then fails; the item keeps saying why.
	fail(run)
	if r := h.expectState(n, ledger.Failed); !strings.Contains(r.Reason, "model budget is spent") {
		t.Fatalf("reason after the run's end %q", r.Reason)
	}
}
