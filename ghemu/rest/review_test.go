package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// featureBranch makes a branch from main whose one commit adds, modifies, deletes and
// renames a file of the default seed, and opens a pull request for it as the App.
func featureBranch(t *testing.T, e *ghemu.Emulator, branch string) *github.PullRequest {
	t.Helper()
	ctx := emutest.Context(t)
	refs, err := e.Git().Refs(ctx, org, repo)
	if err != nil {
		t.Fatal(err)
	}
	main := refs["refs/heads/main"]
	readme, _, err := e.Git().ReadFile(ctx, org, repo, main, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Git().UpdateRef(ctx, org, repo, "refs/heads/"+branch, main, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Git().CommitFiles(ctx, org, repo, branch, main, map[string][]byte{
		"new.txt":        []byte("fresh\n"),
		"widgets.sh":     []byte("#!/bin/sh\n# Prints the widget count.\necho 4\n"),
		"test.sh":        nil,
		"README.md":      nil,
		"docs/README.md": readme,
	}, "Change the widgets", gitserver.Signature{Name: "bumper", Email: "bumper@example.test"}); err != nil {
		t.Fatal(err)
	}
	pr, resp, err := emutest.InstallationClient(t, e).PullRequests.Create(ctx, org, repo, &github.NewPullRequest{
		Title: github.String("Change the widgets"), Head: github.String(branch), Base: github.String("main")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	return pr
}

func TestPullRequestFiles(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	files, _, err := emutest.UserClient(t, e, ghemu.DefaultReader).PullRequests.ListFiles(ctx, org, repo, pr.GetNumber(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*github.CommitFile{}
	for _, f := range files {
		byName[f.GetFilename()] = f
	}
	tests := []struct {
		name, file, status, previous string
		additions, deletions         int
		patch                        string
	}{
		{"added", "new.txt", "added", "", 1, 0, "@@ -0,0 +1 @@\n+fresh"},
		{"modified", "widgets.sh", "modified", "", 1, 1,
			"@@ -1,3 +1,3 @@\n #!/bin/sh\n # Prints the widget count.\n-echo 3\n+echo 4"},
		{"deleted", "test.sh", "removed", "", 0, 4, "@@ -1,4 +0,0 @@\n-#!/bin/sh\n-set -e\n-[ \"$(sh widgets.sh)\" = 3 ]\n-echo '1 passed, 0 failed'"},
		{"renamed", "docs/README.md", "renamed", "README.md", 0, 0, ""},
	}
	if len(files) != len(tests) {
		t.Fatalf("files = %d, want %d", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := byName[tt.file]
			if f == nil {
				t.Fatalf("no %s in the files", tt.file)
			}
			if f.GetStatus() != tt.status || f.GetPreviousFilename() != tt.previous ||
				f.GetAdditions() != tt.additions || f.GetDeletions() != tt.deletions ||
				f.GetChanges() != tt.additions+tt.deletions || f.GetPatch() != tt.patch {
				t.Errorf("%s = status %s prev %q +%d -%d ~%d patch %q; want %s %q +%d -%d %q", tt.file,
					f.GetStatus(), f.GetPreviousFilename(), f.GetAdditions(), f.GetDeletions(), f.GetChanges(),
					f.GetPatch(), tt.status, tt.previous, tt.additions, tt.deletions, tt.patch)
			}
			if len(f.GetSHA()) != 40 || !strings.Contains(f.GetBlobURL(), "/blob/") {
				t.Errorf("sha %q blob_url %q", f.GetSHA(), f.GetBlobURL())
			}
		})
	}
	page, resp, err := emutest.UserClient(t, e, ghemu.DefaultReader).PullRequests.ListFiles(ctx, org, repo, pr.GetNumber(),
		&github.ListOptions{PerPage: 3})
	if err != nil || len(page) != 3 || resp.NextPage != 2 {
		t.Errorf("first page of 3 = %d files, next %d, %v", len(page), resp.NextPage, err)
	}
}

func TestReviewComments(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	bot := emutest.InstallationClient(t, e)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	n := pr.GetNumber()

	tests := []struct {
		name    string
		comment *github.DraftReviewComment
		want    string // "" accepted, else the 422's error
		line    int
		side    string
	}{
		{"an added line (RIGHT)", &github.DraftReviewComment{Path: github.String("widgets.sh"), Line: github.Int(3), Body: github.String("four?")}, "", 3, "RIGHT"},
		{"a removed line (LEFT)", &github.DraftReviewComment{Path: github.String("widgets.sh"), Line: github.Int(3), Side: github.String("LEFT"), Body: github.String("was three")}, "", 3, "LEFT"},
		{"a context line", &github.DraftReviewComment{Path: github.String("widgets.sh"), Line: github.Int(1), Side: github.String("RIGHT"), Body: github.String("shebang")}, "", 1, "RIGHT"},
		{"a range in one hunk", &github.DraftReviewComment{Path: github.String("widgets.sh"), StartLine: github.Int(1), Line: github.Int(3), Body: github.String("all of it")}, "", 3, "RIGHT"},
		{"the position form", &github.DraftReviewComment{Path: github.String("widgets.sh"), Position: github.Int(3), Body: github.String("by position")}, "", 3, "LEFT"},
		{"a line outside the hunks", &github.DraftReviewComment{Path: github.String("widgets.sh"), Line: github.Int(9), Body: github.String("x")}, "Line could not be resolved", 0, ""},
		{"LEFT of an added file", &github.DraftReviewComment{Path: github.String("new.txt"), Line: github.Int(1), Side: github.String("LEFT"), Body: github.String("x")}, "Line could not be resolved", 0, ""},
		{"a file the pull request does not change", &github.DraftReviewComment{Path: github.String("nope.txt"), Line: github.Int(1), Body: github.String("x")}, "Path could not be resolved", 0, ""},
		{"a range that ends before it starts", &github.DraftReviewComment{Path: github.String("widgets.sh"), StartLine: github.Int(3), Line: github.Int(1), Body: github.String("x")}, "Pull request review thread start line must precede the end line.", 0, ""},
		{"a position on the hunk header", &github.DraftReviewComment{Path: github.String("widgets.sh"), Position: github.Int(0), Body: github.String("x")}, "Pull request review thread position is invalid", 0, ""},
	}
	accepted := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _, err := maint.PullRequests.ListReviews(ctx, org, repo, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A line-form comment that lands is sent along, to show that nothing of a
			// refused review is kept (go-github sends no mix of the two forms).
			comments := []*github.DraftReviewComment{tt.comment}
			if tt.comment.Position == nil {
				comments = append([]*github.DraftReviewComment{
					{Path: github.String("new.txt"), Line: github.Int(1), Body: github.String("fine")}}, comments...)
			}
			rv, resp, err := bot.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{
				Event: github.String("COMMENT"), Body: github.String("see inline"), Comments: comments})
			if tt.want != "" {
				emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want %q", err, tt.want)
				}
				after, _, _ := maint.PullRequests.ListReviews(ctx, org, repo, n, nil)
				all, _, _ := maint.PullRequests.ListComments(ctx, org, repo, n, nil)
				if len(after) != len(before) || len(all) != accepted {
					t.Errorf("a refused review left %d reviews (had %d) and %d comments (want %d)", len(after), len(before), len(all), accepted)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			accepted += len(comments)
			cs, _, err := maint.PullRequests.ListReviewComments(ctx, org, repo, n, rv.GetID(), nil)
			if err != nil || len(cs) != len(comments) {
				t.Fatalf("review comments = %d, %v; want %d", len(cs), err, len(comments))
			}
			c := cs[len(cs)-1]
			if c.GetLine() != tt.line || c.GetSide() != tt.side || c.GetPath() != "widgets.sh" ||
				c.GetPullRequestReviewID() != rv.GetID() || c.GetCommitID() != pr.GetHead().GetSHA() ||
				c.GetUser().GetLogin() != "bumper[bot]" || !strings.HasPrefix(c.GetDiffHunk(), "@@ -1,3 +1,3 @@") {
				t.Errorf("comment = line %d side %s path %s review %d commit %s user %s hunk %q",
					c.GetLine(), c.GetSide(), c.GetPath(), c.GetPullRequestReviewID(), c.GetCommitID(),
					c.GetUser().GetLogin(), c.GetDiffHunk())
			}
		})
	}
	all, _, err := maint.PullRequests.ListComments(ctx, org, repo, n, nil)
	if err != nil || len(all) != accepted {
		t.Fatalf("pull request comments = %d, %v; want %d", len(all), err, accepted)
	}
	got, _, err := maint.PullRequests.Get(ctx, org, repo, n)
	if err != nil || got.GetReviewComments() != accepted {
		t.Errorf("review_comments = %d, %v", got.GetReviewComments(), err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, ev := range rc.Got() {
		if c, ok := ev.Payload.(*github.PullRequestReviewCommentEvent); ok && c.GetAction() == "created" {
			created++
			if c.GetComment().GetPullRequestReviewID() == 0 || c.GetPullRequest().GetNumber() != n {
				t.Errorf("review comment webhook = %+v", c.GetComment())
			}
		}
	}
	if created != accepted {
		t.Errorf("pull_request_review_comment created webhooks = %d, want %d", created, accepted)
	}
}

// TestEventsNameThePullRequest checks what the App's pull request life reads from
// webhooks: a completed check run lists the open pull requests of its commit, and a
// comment on a pull request says that its issue is one.
func TestEventsNameThePullRequest(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	bot := emutest.InstallationClient(t, e)
	cr, _, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{
		Name: "bumper/verdict", HeadSHA: pr.GetHead().GetSHA(), Status: github.String("in_progress")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bot.Checks.UpdateCheckRun(ctx, org, repo, cr.GetID(), github.UpdateCheckRunOptions{
		Name: "bumper/verdict", Conclusion: github.String("failure")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := maint.Issues.CreateComment(ctx, org, repo, pr.GetNumber(), &github.IssueComment{Body: github.String("/status")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	var completed *github.CheckRunEvent
	var comment *github.IssueCommentEvent
	for _, ev := range rc.Got() {
		switch p := ev.Payload.(type) {
		case *github.CheckRunEvent:
			if p.GetAction() == "completed" {
				completed = p
			}
		case *github.IssueCommentEvent:
			comment = p
		}
	}
	if completed == nil || len(completed.GetCheckRun().PullRequests) != 1 ||
		completed.GetCheckRun().PullRequests[0].GetNumber() != pr.GetNumber() {
		t.Errorf("check_run completed = %+v", completed)
	}
	if comment == nil || !comment.GetIssue().IsPullRequest() || comment.GetSender().GetLogin() != ghemu.DefaultMaintainer {
		t.Errorf("issue_comment = %+v", comment)
	}
}
