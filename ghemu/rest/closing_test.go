package rest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

func TestClosingKeywords(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	// The default main needs a check and a review; these cases are about what a merge
	// closes, so the branch is unprotected (a "broken" repository, as the control makes it).
	if err := e.RemoveBranchProtection(org, repo, "main"); err != nil {
		t.Fatal(err)
	}
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	refs, err := e.Git().Refs(ctx, org, repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Git().UpdateRef(ctx, org, repo, "refs/heads/release", refs["refs/heads/main"], ""); err != nil {
		t.Fatal(err)
	}
	// body is the pull request's, commit the message of its one commit ("" for "Add
	// <file>"); %d is the issue's number.
	tests := []struct {
		name, base, body, commit string
		merge                    bool
		wantClosed               bool
	}{
		{"Fixes #N merged into the default branch", "main", "fIxEs #%d", "", true, true},
		{"closes: with a colon, among other words", "main", "This work closes: #%d for good.", "", true, true},
		{"closed without merging", "main", "Resolves #%d", "", false, false},
		{"merged into another branch", "release", "Fixes #%d", "", true, false},
		{"no keyword", "main", "Refs #%d", "", true, false},
		{"in a code span of the body", "main", "Not this: `Fixes #%d`", "", true, false},
		{"in a fenced code block of the body", "main", "Example:\n\n```\nFixes #%d\n```\n", "", true, false},
		{"in an indented code block of the body", "main", "Example:\n\n    Fixes #%d\n", "", true, false},
		{"outside code, after a code span", "main", "Runs `make`. Fixes #%d", "", true, true},
		{"Closes #N in a commit message", "main", "", "Count widgets\n\nCloses #%d", true, true},
		{"a commit message merged into another branch", "release", "", "Closes #%d", true, false},
		{"a commit message whose reference was neutralized", "main", "", "Closes # %d", true, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is, _, err := maint.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String(tt.name)})
			if err != nil {
				t.Fatal(err)
			}
			branch := "topic-" + string(rune('a'+i))
			if tt.commit == "" {
				emutest.BranchWithCommit(t, e, branch, branch+".txt")
			} else {
				base := refs["refs/heads/main"]
				if err := e.Git().UpdateRef(ctx, org, repo, "refs/heads/"+branch, base, ""); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Git().CommitFiles(ctx, org, repo, branch, base, map[string][]byte{branch + ".txt": []byte("x\n")},
					fmt.Sprintf(tt.commit, is.GetNumber()), gitserver.Signature{Name: "agent", Email: "agent@example.test"}); err != nil {
					t.Fatal(err)
				}
			}
			body := tt.body
			if strings.Contains(body, "%d") {
				body = fmt.Sprintf(body, is.GetNumber())
			}
			pr, _, err := maint.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String(branch),
				Head: github.String(branch), Base: github.String(tt.base), Body: github.String(body)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.merge {
				if _, _, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil); err != nil {
					t.Fatal(err)
				}
			} else if _, _, err := maint.PullRequests.Edit(ctx, org, repo, pr.GetNumber(), &github.PullRequest{State: github.String("closed")}); err != nil {
				t.Fatal(err)
			}
			got, _, err := maint.Issues.Get(ctx, org, repo, is.GetNumber())
			if err != nil {
				t.Fatal(err)
			}
			if closed := got.GetState() == "closed"; closed != tt.wantClosed {
				t.Fatalf("issue state %s, want closed=%v", got.GetState(), tt.wantClosed)
			}
			if tt.wantClosed && (got.GetStateReason() != "completed" || got.GetClosedBy().GetLogin() != ghemu.DefaultMaintainer) {
				t.Errorf("closed with reason %q by %q", got.GetStateReason(), got.GetClosedBy().GetLogin())
			}
		})
	}
}
