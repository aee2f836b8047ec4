package web_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// webGet fetches a page of the web view without credentials, as a browser would.
func webGet(t *testing.T, e *ghemu.Emulator, path string) (int, http.Header, string) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(e.BaseURL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestWebViewPages(t *testing.T) {
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	bot := emutest.InstallationClient(t, e)

	const evil = `<script>alert("x")</script>`
	_, resp, err := maint.Issues.CreateLabel(ctx, org, repo, &github.Label{Name: github.String("<b>" + evil), Color: github.String("b60205")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	issue, resp, err := maint.Issues.Create(ctx, org, repo, &github.IssueRequest{
		Title:  github.String("Title " + evil),
		Body:   github.String("Body with **bold** and " + evil + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"),
		Labels: &[]string{"<b>" + evil, "agent:implement"},
	})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	_, resp, err = maint.Issues.CreateComment(ctx, org, repo, issue.GetNumber(), &github.IssueComment{Body: github.String("Comment " + evil + " ~~old~~")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)

	head := emutest.BranchWithCommit(t, e, "bumper/9-1", "frob.txt")
	pr, resp, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String("Add frob " + evil),
		Head: github.String("bumper/9-1"), Base: github.String("main"), Body: github.String("### Evidence\n\n- **Tests:** passed\n")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	cr, resp, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: "bumper/verdict", HeadSHA: head,
		Status: github.String("completed"), Conclusion: github.String("failure"),
		Output: &github.CheckRunOutput{Title: github.String("Changes requested"), Summary: github.String("**Verdict:** " + evil)}})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	rv, resp, err := maint.PullRequests.CreateReview(ctx, org, repo, pr.GetNumber(), &github.PullRequestReviewRequest{
		Event: github.String("REQUEST_CHANGES"), Body: github.String("Please _rename_ it. " + evil),
		Comments: []*github.DraftReviewComment{{Path: github.String("frob.txt"), Line: github.Int(1), Side: github.String("RIGHT"),
			Body: github.String("Inline: **why x?** " + evil)}}})
	emutest.WantStatus(t, resp, err, http.StatusOK)

	issuePath := "/" + org + "/" + repo + "/issues/" + strconv.Itoa(issue.GetNumber())
	pullPath := "/" + org + "/" + repo + "/pull/" + strconv.Itoa(pr.GetNumber())
	tests := []struct {
		name   string
		path   string
		want   []string
		absent []string
	}{
		{"index", "/", []string{`href="/acme/widgets"`, "It shows everything, private repositories included, without a login", `href="/maintainer"`}, nil},
		{"owner", "/acme", []string{`href="/acme/widgets"`, "Organization"}, nil},
		{"repository", "/acme/widgets", []string{"Open pull requests", `href="` + pullPath + `"`, `href="` + issuePath + `"`,
			"Title &lt;script&gt;", "required 1 check: bumper/verdict", "git clone " + e.BaseURL() + "/acme/widgets.git"}, []string{"<script"}},
		{"issue: title, labels and comments escaped, Markdown rendered with raw HTML sanitized", issuePath, []string{
			"Title &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "&lt;b&gt;&lt;script&gt;", "<strong>bold</strong>",
			"<table>", "<del>old</del>", `style="background-color: #b60205; color: #ffffff"`,
			`id="issuecomment-`}, []string{"<script", "<b>", `alert("x")`}},
		{"pull request: sections, check, review, diff", pullPath, []string{
			`id="description"`, `<h3>Evidence</h3>`, `id="checks"`, `data-name="bumper/verdict" data-conclusion="failure"`,
			`href="/acme/widgets/runs/` + strconv.FormatInt(cr.GetID(), 10) + `"`, "<strong>Verdict:</strong>",
			`id="reviews"`, `id="pullrequestreview-` + strconv.FormatInt(rv.GetID(), 10) + `"`, "CHANGES_REQUESTED", "<em>rename</em>", `<code>frob.txt</code> line 1 (new side)`, "Inline: <strong>why x?</strong>",
			`id="diff"`, `<tr class="diff-line diff-hunk">`, `<tr class="diff-line diff-add"><td class="ln"></td><td class="ln">1</td><td class="code"><span class="marker">+</span>x</td></tr>`,
			"frob.txt", "Merging is blocked"}, []string{"<script"}},
		{"check run", "/acme/widgets/runs/" + strconv.FormatInt(cr.GetID(), 10), []string{"bumper/verdict", "Changes requested",
			"<strong>Verdict:</strong>", `href="` + pullPath + `"`}, []string{"<script"}},
		{"commit", "/acme/widgets/commit/" + head, []string{"Add frob.txt", `class="diff-line diff-add"`, "frob.txt"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := webGet(t, e, tc.path)
			if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
				t.Fatalf("GET %s: %d %s", tc.path, status, h.Get("Content-Type"))
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
				t.Errorf("CSP %q should forbid every script", csp)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("missing %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(body, a) {
					t.Errorf("found %q", a)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", body)
			}
		})
	}

	t.Run("an issue URL of a pull request redirects to it, and back", func(t *testing.T) {
		status, h, _ := webGet(t, e, "/acme/widgets/issues/"+strconv.Itoa(pr.GetNumber()))
		if status != http.StatusFound || h.Get("Location") != pullPath {
			t.Errorf("got %d to %q, want 302 to %s", status, h.Get("Location"), pullPath)
		}
		status, h, _ = webGet(t, e, "/acme/widgets/pull/"+strconv.Itoa(issue.GetNumber()))
		if status != http.StatusFound || h.Get("Location") != issuePath {
			t.Errorf("got %d to %q, want 302 to %s", status, h.Get("Location"), issuePath)
		}
	})

	t.Run("diff_url and patch_url serve the diff as text", func(t *testing.T) {
		status, h, body := webGet(t, e, pullPath+".diff")
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") ||
			!strings.HasPrefix(body, "diff --git a/frob.txt b/frob.txt\n") || !strings.Contains(body, "\n+x\n") {
			t.Errorf(".diff: %d %s\n%s", status, h.Get("Content-Type"), body)
		}
		status, _, body = webGet(t, e, pullPath+".patch")
		if status != http.StatusOK || !strings.HasPrefix(body, "From "+head) || !strings.Contains(body, "Subject: [PATCH] Add frob.txt") {
			t.Errorf(".patch: %d\n%s", status, body)
		}
	})

	// Last: it moves the pull request's head.
	t.Run("the commits, with GitHub's Verified badge on the App's signed one", func(t *testing.T) {
		c, _, err := bot.Git.GetCommit(ctx, org, repo, head)
		if err != nil {
			t.Fatal(err)
		}
		signed, resp, err := bot.Git.CreateCommit(ctx, org, repo, &github.Commit{Message: github.String("Signed " + evil),
			Tree: c.Tree, Parents: []*github.Commit{{SHA: github.String(head)}}}, nil)
		emutest.WantStatus(t, resp, err, http.StatusCreated)
		_, resp, err = bot.Git.UpdateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/bumper/9-1"),
			Object: &github.GitObject{SHA: signed.SHA}}, false)
		emutest.WantStatus(t, resp, err, http.StatusOK)
		_, _, body := webGet(t, e, pullPath)
		for _, w := range []string{`id="commits"`, `data-sha="` + head + `" data-badge=""`, `data-sha="` + signed.GetSHA() + `" data-badge="Verified"`,
			"Signed &lt;script&gt;"} {
			if !strings.Contains(body, w) {
				t.Errorf("missing %q", w)
			}
		}
		if strings.Index(body, `data-sha="`+head) > strings.Index(body, `data-sha="`+signed.GetSHA()) {
			t.Error("the commits are not oldest first")
		}
		if strings.Contains(body, "<script") {
			t.Error("the commit's headline is not escaped")
		}
	})
}

func TestWebViewNotFound(t *testing.T) {
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	issue, resp, err := emutest.UserClient(t, e, ghemu.DefaultMaintainer).Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("exists")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	n := strconv.Itoa(issue.GetNumber())
	for _, path := range []string{
		"/nobody",
		"/acme/nothing",
		"/acme/nothing/issues/1",
		"/acme/widgets/issues/999",
		"/acme/widgets/issues/abc",
		"/acme/widgets/issues/-1",
		"/acme/widgets/pull/999",
		"/acme/widgets/pull/999.diff",
		"/acme/widgets/pull/" + n + ".diff", // an issue has no diff
		"/acme/widgets/runs/999",
		"/acme/widgets/actions/runs/999",
		"/acme/widgets/actions/runs/x/job/1",
		"/acme/widgets/commit/0000000000000000000000000000000000000000",
		"/acme/widgets/commit/not..a..ref",
		"/acme/widgets/tree/main",
	} {
		t.Run(path, func(t *testing.T) {
			status, h, body := webGet(t, e, path)
			if status != http.StatusNotFound || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "not found") {
				t.Errorf("GET %s: %d %s\n%s", path, status, h.Get("Content-Type"), body)
			}
		})
	}
}

func TestWebViewLeavesTheAPIAndGitAlone(t *testing.T) {
	// Two requests below are not GitHub routes on purpose.
	e := emutest.New(t, ghemu.Options{}, emutest.AllowInvalidRequests())
	tok := e.UserToken(ghemu.DefaultMaintainer)
	tests := []struct {
		name, method, path string
		status             int
		contentType        string
	}{
		{"the REST API keeps /repos", http.MethodGet, "/repos/acme/widgets", http.StatusOK, "application/json"},
		{"an unknown REST path is GitHub's JSON 404", http.MethodGet, "/repos/acme", http.StatusNotFound, "application/json"},
		{"writes to web paths are not the view's", http.MethodPost, "/acme/widgets", http.StatusNotFound, "application/json"},
		{"git smart HTTP keeps /{owner}/{repo}.git", http.MethodGet, "/acme/widgets.git/info/refs?service=git-upload-pack", http.StatusOK, "application/x-git-upload-pack-advertisement"},
		{"the OIDC issuer keeps /.well-known", http.MethodGet, "/.well-known/openid-configuration", http.StatusOK, "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, e.BaseURL()+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(tc.path, "git-upload-pack") {
				req.SetBasicAuth("x-access-token", tok)
			} else {
				req.Header.Set("Authorization", "token "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) {
				t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.contentType)
			}
		})
	}
}

func TestWebViewWorkflowRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a workflow with the local runner")
	}
	e := emutest.New(t, ghemu.Options{Runner: &ghemu.Runner{Command: []string{"/bin/sh", "-c",
		`echo "job says <hi>"; printf '### Done\n\n- **ok**\n' >> "$GITHUB_STEP_SUMMARY"`}}})
	ctx := emutest.Context(t)
	id := emutest.Dispatch(t, emutest.InstallationClient(t, e), ghemu.DefaultWorkflow,
		map[string]any{"work_item": "acme/widgets#1", "attempt": "2", "nonce": "n-1", "stage": "implement"})
	info, err := e.WaitRun(ctx, org, repo, id)
	if err != nil || info.Conclusion != "success" {
		t.Fatalf("run: %+v, %v", info, err)
	}
	runPath := "/acme/widgets/actions/runs/" + strconv.FormatInt(id, 10)
	jobPath := runPath + "/job/" + strconv.FormatInt(info.JobID, 10)
	tests := []struct {
		name, path string
		want       []string
	}{
		{"the run: status, conclusion, inputs, summary and a link to the log", runPath,
			[]string{`id="run-state">success`, "bumper-runner-1", "work_item", "acme/widgets#1", "<h3>Done</h3>", "<strong>ok</strong>", `href="` + jobPath + `"`}},
		{"the job: its log, escaped", jobPath, []string{`id="log">job says &lt;hi&gt;`}},
		{"the repository lists the run", "/acme/widgets", []string{`href="` + runPath + `"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := webGet(t, e, tc.path)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d", tc.path, status)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("missing %q in:\n%s", w, body)
				}
			}
		})
	}
}
