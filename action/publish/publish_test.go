package publish

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/faults"
)

// TestPublish is step 6 of a run end to end: the agent's verified commit is pushed
// through the firewall's git gateway, the pull request and the evidence check run are
// made with the run's token (each twice, as a retried run would), and the token is
// revoked twice.
func TestPublish(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	w := h.prepare(t, 1, 1)
	r := agentCommit(t, w, map[string]string{"widgets.sh": "#!/bin/sh\n# Prints the widget count.\ncat count 2>/dev/null || echo 3\n"})
	ev := runEvidence(t, h, r, 1, 1)
	opts := Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Head: r.Head, Permissions: h.perms}
	var pr *PullRequest

	t.Run("push", func(t *testing.T) {
		p, err := Push(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if p.Head != r.Head || p.Ref != "refs/heads/bumper/1-1" || p.UpToDate || len(p.Workflows) != 0 {
			t.Errorf("Push = %+v; want head %s on refs/heads/bumper/1-1", p, r.Head)
		}
		if got := h.refs(t)["refs/heads/bumper/1-1"]; got != r.Head {
			t.Errorf("bumper/1-1 on the git host is %q, want %s", got, r.Head)
		}
		if got := h.refs(t)["refs/heads/main"]; got != h.base {
			t.Errorf("main moved to %s", got)
		}
		audit := h.waitAudit(t, "git-receive-pack")
		if !strings.Contains(audit, "git-receive-pack") {
			t.Errorf("the push is not in the firewall's audit log:\n%s", audit)
		}
		if strings.Contains(audit, h.token) {
			t.Error("the token is in the audit log")
		}
		cfg, _ := os.ReadFile(filepath.Join(w.RepoDir, ".git", "config"))
		if strings.Contains(string(cfg), h.token) || strings.Contains(string(cfg), "url") {
			t.Errorf("the push left a remote or the token in .git/config:\n%s", cfg)
		}
	})
	t.Run("push again", func(t *testing.T) {
		p, err := Push(ctx, opts)
		if err != nil || !p.UpToDate || p.Head != r.Head {
			t.Fatalf("second Push = %+v, %v; want up to date", p, err)
		}
	})
	t.Run("pull request", func(t *testing.T) {
		o := PullRequestOptions{Repository: fullName, Issue: 1, Attempt: 1, Base: "main", Title: "Count widgets\nfrom the config",
			BotLogin: botLogin, Summary: "The agent changed `widgets.sh`; tests pass.", Evidence: ev}
		var err error
		pr, err = OpenPullRequest(ctx, h.gh, o)
		if err != nil {
			t.Fatal(err)
		}
		if !pr.Created || pr.HeadSHA != r.Head || len(pr.Cuts) != 0 {
			t.Errorf("OpenPullRequest = %+v; want a new pull request at %s, nothing cut", pr, r.Head)
		}
		got, _, err := h.gh.PullRequests.Get(ctx, owner, repoName, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		digest, _ := ev.Digest()
		body := got.GetBody()
		switch {
		case got.GetUser().GetLogin() != botLogin || got.GetUser().GetType() != "Bot":
			t.Errorf("opened by %s (%s), want %s", got.GetUser().GetLogin(), got.GetUser().GetType(), botLogin)
		case got.GetTitle() != "Count widgets from the config":
			t.Errorf("title %q", got.GetTitle())
		case got.GetHead().GetRef() != "bumper/1-1" || got.GetBase().GetRef() != "main":
			t.Errorf("%s -> %s", got.GetHead().GetRef(), got.GetBase().GetRef())
		case !strings.HasPrefix(body, "Fixes #1\n\nThe agent changed `widgets.sh`; tests pass.\n\n"):
			t.Errorf("body does not start with Fixes #1 and the summary:\n%.300s", body)
		case !strings.Contains(body, digest) || !strings.Contains(body, "<details>"):
			t.Errorf("body lacks the evidence (digest %s):\n%.500s", digest, body)
		}
		again, err := OpenPullRequest(ctx, h.gh, o)
		if err != nil || again.Number != pr.Number || again.Created {
			t.Fatalf("second OpenPullRequest = %+v, %v; want #%d again", again, err, pr.Number)
		}
		open, _, err := h.gh.PullRequests.List(ctx, owner, repoName, &github.PullRequestListOptions{State: "open"})
		if err != nil || len(open) != 1 {
			t.Errorf("%d open pull requests, want 1 (%v)", len(open), err)
		}
	})
	t.Run("evidence check run", func(t *testing.T) {
		o := CheckRunOptions{Repository: fullName, Head: r.Head, Evidence: ev, ServerURL: "https://github.com"}
		cr, err := EvidenceCheckRun(ctx, h.gh, o)
		if err != nil {
			t.Fatal(err)
		}
		if !cr.Created || cr.Conclusion != "success" {
			t.Errorf("EvidenceCheckRun = %+v; want a new run, success", cr)
		}
		failed := *ev
		failed.Outcome, failed.OutcomeReason = evidence.OutcomeFailure, "2 tests still fail"
		o.Evidence = &failed
		again, err := EvidenceCheckRun(ctx, h.gh, o)
		if err != nil || again.Created || again.ID != cr.ID || again.Conclusion != "failure" {
			t.Fatalf("second EvidenceCheckRun = %+v, %v; want run %d updated to failure", again, err, cr.ID)
		}
		list, _, err := h.gh.Checks.ListCheckRunsForRef(ctx, owner, repoName, r.Head, &github.ListCheckRunsOptions{Filter: github.String("all")})
		if err != nil {
			t.Fatal(err)
		}
		if list.GetTotal() != 1 {
			t.Fatalf("%d check runs on the head, want 1", list.GetTotal())
		}
		got := list.CheckRuns[0]
		switch {
		case got.GetName() != EvidenceCheckName || got.GetStatus() != "completed" || got.GetConclusion() != "failure":
			t.Errorf("check run %s %s %s", got.GetName(), got.GetStatus(), got.GetConclusion())
		case got.GetDetailsURL() != "https://github.com/acme/widgets/actions/runs/9876543210":
			t.Errorf("details_url %q", got.GetDetailsURL())
		case got.GetOutput().GetTitle() != "Run failure: 2 tests still fail" || !strings.Contains(got.GetOutput().GetSummary(), "<details>"):
			t.Errorf("output %q: %.200s", got.GetOutput().GetTitle(), got.GetOutput().GetSummary())
		case got.GetApp().GetSlug() != ghemu.DefaultAppSlug:
			t.Errorf("made by app %q", got.GetApp().GetSlug())
		}
		if pulls := got.PullRequests; len(pulls) != 1 || pulls[0].GetNumber() != pr.Number {
			t.Errorf("check run's pull requests %v, want #%d", pulls, pr.Number)
		}
	})
	t.Run("revoke", func(t *testing.T) {
		if err := Revoke(ctx, h.e.BaseURL(), h.token, nil); err != nil {
			t.Fatal(err)
		}
		_, resp, err := h.gh.PullRequests.Get(ctx, owner, repoName, pr.Number)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the API with the revoked token: %v; want 401", err)
		}
		err = Revoke(ctx, h.e.BaseURL()+"/", h.token, &http.Client{})
		if !errors.Is(err, ErrAlreadyRevoked) || !Revoked(err) || strings.Contains(err.Error(), h.token) {
			t.Errorf("second Revoke = %v; want ErrAlreadyRevoked", err)
		}
		// The gateway's copy is dead too: a push through it is refused by the host.
		if _, err := Push(ctx, opts); err == nil {
			t.Error("a push with the revoked token succeeded")
		} else if strings.Contains(err.Error(), h.token) || !strings.Contains(err.Error(), "revoked or expired") {
			t.Errorf("push with the revoked token: %v", err)
		}
	})
}

// TestPushRefused: what a run must not push is refused, by Push itself and, when
// Push's own check is out of the way, by the firewall's git gateway (the layer the VM
// cannot talk its way around), with the gateway's words in the error.
func TestPushRefused(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	w11 := h.prepare(t, 1, 1)
	r11 := agentCommit(t, w11, map[string]string{"README.md": "# widgets\n\nnow counted\n"})

	tests := []struct {
		name   string
		run    func(t *testing.T) (*Pushed, error)
		want   []error
		notIs  error
		msg    []string
		remote bool // the message quotes the gateway's remote: lines
		// workBranchStays: refs/heads/bumper/1-1 must not move either.
		workBranchStays bool
	}{
		{
			name: "Push's own check: main",
			run: func(t *testing.T) (*Pushed, error) {
				return push(ctx, Options{Workspace: w11, GitURL: h.gitURL, Issue: 1, Attempt: 1}, "refs/heads/main")
			},
			want: []error{ErrInvalidOptions}, notIs: ErrPushRefused, msg: []string{`refusing to push to "refs/heads/main"`},
		},
		{
			name: "the gateway: main",
			run: func(t *testing.T) (*Pushed, error) {
				return gitPush(ctx, Options{Workspace: w11, GitURL: h.gitURL, Issue: 1, Attempt: 1}, "refs/heads/main")
			},
			want:   []error{ErrPushRefused},
			msg:    []string{"remote: bumper firewall: refused: refs/heads/main (this run may only push refs/heads/bumper/1-1)"},
			remote: true,
		},
		{
			name: "the gateway: a tag",
			run: func(t *testing.T) (*Pushed, error) {
				return gitPush(ctx, Options{Workspace: w11, GitURL: h.gitURL}, "refs/tags/v1")
			},
			want: []error{ErrPushRefused}, msg: []string{"refused: refs/tags/v1"}, remote: true,
		},
		{
			name: "the gateway: another run's branch",
			run: func(t *testing.T) (*Pushed, error) {
				w := h.prepare(t, 2, 1)
				agentCommit(t, w, map[string]string{"x.txt": "x\n"})
				return Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 2, Attempt: 1})
			},
			want: []error{ErrPushRefused}, msg: []string{"refused: refs/heads/bumper/2-1 (this run may only push refs/heads/bumper/1-1)"}, remote: true,
		},
		{
			// Before the case that creates bumper/1-1. publish's own check skipped (no permissions known): the emulator, as
			// GitHub, refuses the contents-only token's push through the gateway.
			name: "workflows without the workflows permission, publish's own check bypassed",
			run: func(t *testing.T) (*Pushed, error) {
				w := h.prepare(t, 1, 1)
				agentCommit(t, w, map[string]string{".github/workflows/" + ghemu.DefaultWorkflow: "name: pwned\non: push\n", "README.md": "x\n"})
				return Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1})
			},
			want: []error{ErrWorkflowsPermission, ErrPushRefused},
			msg: []string{"refusing to allow a GitHub App to create or update workflow `.github/workflows/bumper-run.yml` without `workflows` permission",
				"workflows: write"},
			workBranchStays: true,
		},
		{
			name: "the branch at another commit",
			run: func(t *testing.T) (*Pushed, error) {
				if _, err := Push(ctx, Options{Workspace: w11, GitURL: h.gitURL, Issue: 1, Attempt: 1, Head: r11.Head}); err != nil {
					t.Fatal(err)
				}
				w := h.prepare(t, 1, 1)
				agentCommit(t, w, map[string]string{"other.txt": "another try\n"})
				return Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1})
			},
			want: []error{ErrPushRefused}, msg: []string{"the branch already exists at another commit"},
		},
		{
			name: "workflows without the workflows permission",
			run: func(t *testing.T) (*Pushed, error) {
				w := h.prepare(t, 1, 1)
				agentCommit(t, w, map[string]string{".github/workflows/" + ghemu.DefaultWorkflow: "name: pwned\non: push\n", "README.md": "x\n"})
				return Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Permissions: h.perms})
			},
			want: []error{ErrWorkflowsPermission}, notIs: ErrPushRefused,
			msg: []string{".github/workflows/bumper-run.yml", "workflows: write"},
		},
		{
			name: "a result Push is told another head for",
			run: func(t *testing.T) (*Pushed, error) {
				return Push(ctx, Options{Workspace: w11, GitURL: h.gitURL, Issue: 1, Attempt: 1, Head: h.base})
			},
			want: []error{ErrInvalidOptions}, msg: []string{"not the verified head"},
		},
		{
			name: "no result",
			run: func(t *testing.T) (*Pushed, error) {
				return Push(ctx, Options{Workspace: h.prepare(t, 1, 1), GitURL: h.gitURL, Issue: 1, Attempt: 1})
			},
			want: []error{ErrNoResult},
		},
		{
			name: "another repository's gateway",
			run: func(t *testing.T) (*Pushed, error) {
				return Push(ctx, Options{Workspace: w11, GitURL: strings.Replace(h.gitURL, "widgets", "gadgets", 1), Issue: 1, Attempt: 1})
			},
			want: []error{ErrInvalidOptions}, msg: []string{"the workspace is of acme/widgets"},
		},
		{
			name: "credentials in the URL",
			run: func(t *testing.T) (*Pushed, error) {
				return Push(ctx, Options{Workspace: w11, GitURL: strings.Replace(h.gitURL, "http://", "http://x-access-token:ghs_x@", 1), Issue: 1, Attempt: 1})
			},
			want: []error{ErrInvalidOptions}, msg: []string{"carries credentials"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := h.refs(t)
			p, err := tc.run(t)
			if err == nil {
				t.Fatalf("pushed %+v; want a refusal", p)
			}
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Errorf("error %q is not %q", err, want)
				}
			}
			if tc.notIs != nil && errors.Is(err, tc.notIs) {
				t.Errorf("error %q is %q", err, tc.notIs)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			if tc.remote && !strings.Contains(err.Error(), "remote: bumper firewall: push refused before reaching the git host") {
				t.Errorf("error %q does not quote the gateway", err)
			}
			if strings.Contains(err.Error(), h.token) {
				t.Error("the token is in the error")
			}
			after := h.refs(t)
			refs := []string{"refs/heads/main", "refs/tags/v1", "refs/heads/bumper/2-1"}
			if tc.workBranchStays {
				refs = append(refs, "refs/heads/bumper/1-1")
			}
			for _, ref := range refs {
				if before[ref] != after[ref] {
					t.Errorf("%s moved from %q to %q", ref, before[ref], after[ref])
				}
			}
		})
	}
}

// TestRefusalOfWorkflows: GitHub's own refusal of a workflow change (GitHub's text, which
// the emulator also sends: see TestPushRefused) is reported as ErrWorkflowsPermission.
func TestRefusalOfWorkflows(t *testing.T) {
	p := &Pushed{Ref: "refs/heads/bumper/1-1", Head: strings.Repeat("a", 40), Workflows: []string{".github/workflows/ci.yml"}}
	tests := []struct {
		name, reason, stderr string
		want                 error
		msg                  string
	}{
		{"github's workflow refusal", "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission",
			"To http://127.0.0.1:1/git/acme/widgets.git\n ! [remote rejected] aaaa -> bumper/1-1 (refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission)",
			ErrWorkflowsPermission, "workflows: write"},
		{"protected branch", "protected branch hook declined", "remote: error: GH006: Protected branch update failed for refs/heads/bumper/1-1.\n",
			ErrPushRefused, "remote: error: GH006"},
		{"stale", "fetch first", "", ErrPushRefused, "already exists at another commit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := *p
			q.Remote = remoteLines(tc.stderr)
			err := refusal(&q, tc.reason, tc.stderr)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("refusal = %q; want %v saying %q", err, tc.want, tc.msg)
			}
		})
	}
}

// TestOpenPullRequestNotTheApps: a pull request from the work branch that a person
// opened is never taken as the run's, and no second one is opened.
func TestOpenPullRequestNotTheApps(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	w := h.prepare(t, 1, 1)
	r := agentCommit(t, w, map[string]string{"README.md": "changed\n"})
	if _, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	mae := apiClient(t, h.e, h.e.UserToken(ghemu.DefaultMaintainer))
	theirs, _, err := mae.PullRequests.Create(ctx, owner, repoName, &github.NewPullRequest{Title: github.String("mine"), Head: github.String("bumper/1-1"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	o := PullRequestOptions{Repository: fullName, Issue: 1, Attempt: 1, Base: "main", Title: "t", BotLogin: botLogin, Evidence: runEvidence(t, h, r, 1, 1)}
	_, err = OpenPullRequest(ctx, h.gh, o)
	if !errors.Is(err, ErrNotTheApps) || !strings.Contains(err.Error(), ghemu.DefaultMaintainer) {
		t.Fatalf("OpenPullRequest = %v; want ErrNotTheApps naming %s's #%d", err, ghemu.DefaultMaintainer, theirs.GetNumber())
	}
	for _, bad := range []PullRequestOptions{
		{Repository: fullName, Issue: 1, Attempt: 1, Base: "main", BotLogin: "maintainer"},
		{Repository: "acme", Issue: 1, Attempt: 1, Base: "main", BotLogin: botLogin},
		{Repository: fullName, Issue: 0, Attempt: 1, Base: "main", BotLogin: botLogin},
		{Repository: fullName, Issue: 1, Attempt: 1, Base: "refs/heads/main", BotLogin: botLogin},
	} {
		if _, err := OpenPullRequest(ctx, h.gh, bad); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("OpenPullRequest(%+v) = %v; want ErrInvalidOptions", bad, err)
		}
	}
}

// TestPullBody: the body stays within GitHub's 65,536 characters whatever the summary
// and the evidence hold, and says what it cut.
func TestPullBody(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "evidence", "testdata", "realistic.json"))
	if err != nil {
		t.Fatal(err)
	}
	big, err := evidence.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		big.Diff.Files = append(big.Diff.Files, evidence.FileStat{Path: strings.Repeat("d/", 40) + "file" + strings.Repeat("x", i%50) + ".go", Insertions: i})
	}
	tests := []struct {
		name     string
		summary  string
		ev       *evidence.Evidence
		wantCuts []string
	}{
		{"no evidence", "short", nil, nil},
		{"long summary", strings.Repeat("é", MaxSummary), nil, []string{"summary: cut"}},
		{"large evidence", "ok", big, []string{"evidence files:"}},
		{"both", strings.Repeat("word ", 4000), big, []string{"summary: cut", "evidence files:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, cuts := pullBody(PullRequestOptions{Issue: 7, Summary: tc.summary, Evidence: tc.ev})
			if n := len([]rune(body)); n > BodyLimit || !strings.HasPrefix(body, "Fixes #7\n") {
				t.Errorf("body of %d characters starting %.20q", n, body)
			}
			if !utf8.ValidString(body) || strings.Contains(body, "\uFFFD") {
				t.Error("the body's UTF-8 was broken")
			}
			joined := strings.Join(cuts, "\n")
			for _, w := range tc.wantCuts {
				if !strings.Contains(joined, w) {
					t.Errorf("cuts %q lack %q", cuts, w)
				}
			}
			if len(tc.wantCuts) == 0 && len(cuts) != 0 {
				t.Errorf("cuts %q, want none", cuts)
			}
		})
	}
}

// TestRevokeRefusesBadInput: nothing is sent for a URL with credentials, another
// scheme, or no token; Revoked says what counts as revoked.
func TestRevokeRefusesBadInput(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct{ name, base, token string }{
		{"credentials in the URL", "https://x:y@api.github.com", "ghs_abc"},
		{"not http", "file:///etc", "ghs_abc"},
		{"a query", "https://api.github.com?x=1", "ghs_abc"},
		{"no token", "https://api.github.com", ""},
		{"a token with a line break", "https://api.github.com", "ghs_abc\r\nX-Evil: 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Revoke(ctx, tc.base, tc.token, nil)
			if !errors.Is(err, ErrInvalidOptions) || Revoked(err) || (tc.token != "" && strings.Contains(err.Error(), tc.token)) {
				t.Errorf("Revoke = %v; want ErrInvalidOptions without the token", err)
			}
		})
	}
	if !Revoked(nil) || !Revoked(ErrAlreadyRevoked) || Revoked(errors.New("x")) {
		t.Error("Revoked is wrong")
	}
}

// TestPullBodySaysDeniedHostsOnce: the body says in one line how many hosts were
// denied, counting a host refused twenty times once, and says nothing when none were.
func TestPullBodySaysDeniedHostsOnce(t *testing.T) {
	var twenty []evidence.AuditEntry
	for range 20 {
		twenty = append(twenty, evidence.AuditEntry{Kind: "connect", Target: "pkgs.example.test:443", Denied: "host"})
	}
	tests := []struct {
		name    string
		entries []evidence.AuditEntry
		want    string
	}{
		{"none", nil, ""},
		{"one host twenty times", twenty, "**1 host was denied** — a suggested policy change is in the evidence (Egress)."},
		{"two hosts", append(twenty, evidence.AuditEntry{Kind: "http", Target: "pypi.unlisted.test", Denied: "host"}),
			"**2 hosts were denied** — a suggested policy change is in the evidence (Egress)."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := evidencetest.Realistic()
			ev.Egress.Denials = evidence.SummarizeDenials(tc.entries, nil, evidence.PolicyKeyAllowlist, nil)
			body, _ := pullBody(PullRequestOptions{Issue: 7, Evidence: ev})
			n := strings.Count(body, "denied** — ")
			switch {
			case tc.want == "" && n != 0:
				t.Fatalf("a denied line without denials:\n%.400s", body)
			case tc.want != "" && (n != 1 || !strings.Contains(body, "\n"+tc.want+"\n")):
				t.Fatalf("want the line %q once, got %d in:\n%.400s", tc.want, n, body)
			}
		})
	}
}

// TestOpenPullRequestThroughGitHubsFaults: GitHub's 5xx on opening the pull request are
// tried again (GitHub opens one per branch at most, so a second try cannot make two),
// and the run gets its one pull request.
func TestOpenPullRequestThroughGitHubsFaults(t *testing.T) {
	seed := uint64(4)
	h := newHostWith(t, ghemu.Options{Faults: &ghemu.FaultsConfig{Seed: &seed, REST: []faults.RESTRule{
		{Route: "/repos/{owner}/{repo}/pulls", Methods: []string{"POST"}, BadGateway: 0.6},
	}}})
	ctx := testCtx(t)
	w := h.prepare(t, 1, 1)
	r := agentCommit(t, w, map[string]string{"notes/1.md": "noted\n"})
	if _, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	o := PullRequestOptions{Repository: fullName, Issue: 1, Attempt: 1, Base: "main", Title: "t", BotLogin: botLogin, Evidence: runEvidence(t, h, r, 1, 1)}
	pr, err := OpenPullRequest(ctx, h.gh, o)
	if err != nil || pr.Number == 0 {
		t.Fatalf("OpenPullRequest: %v, %v", pr, err)
	}
	pulls, _, err := h.gh.PullRequests.List(ctx, owner, repoName, &github.PullRequestListOptions{State: "all"})
	if err != nil || len(pulls) != 1 {
		t.Fatalf("%d pull requests (%v), want 1", len(pulls), err)
	}
	if h.e.Faults().Counts().Total() == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
}
