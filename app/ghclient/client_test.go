package ghclient

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/faults"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// client is the adapter on an installation token of the emulator's default repository.
func client(t *testing.T) (*Client, string) {
	t.Helper()
	return clientOf(t, ghemu.Options{})
}

// clientOf is client on an emulator made with opts.
func clientOf(t *testing.T, opts ghemu.Options) (*Client, string) {
	t.Helper()
	e := emutest.New(t, opts, emutest.AllowInvalidRequests())
	tok := emutest.InstallationToken(t, e, ghemu.DefaultOrg, ghemu.DefaultRepo, map[string]string{"contents": "write", "issues": "write"})
	gh := gogithub.NewClient(nil).WithAuthToken(tok)
	base, err := url.Parse(strings.TrimRight(e.BaseURL(), "/") + "/")
	if err != nil {
		t.Fatal(err)
	}
	gh.BaseURL = base
	return &Client{gh: gh}, ghemu.DefaultOrg + "/" + ghemu.DefaultRepo
}

// TestCreateRefTellsExistsFromRefused: only GitHub's "Reference already exists" is a
// ref that is there. Its other 422s are errors: taken for "exists", they would make a
// replica stand down from a dispatch nobody made, or refuse a nonce nobody used.
func TestCreateRefTellsExistsFromRefused(t *testing.T) {
	c, repo := client(t)
	ctx := context.Background()
	head, err := c.BranchHead(ctx, repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	const ref = "refs/bumper/dispatch/1-abc-1"
	if created, err := c.CreateRef(ctx, repo, ref, head); !created || err != nil {
		t.Fatalf("first create: %v, %v; want created", created, err)
	}
	if created, err := c.CreateRef(ctx, repo, ref, head); created || err != nil {
		t.Fatalf("second create: %v, %v; want it found there, without an error", created, err)
	}
	for _, tc := range []struct{ name, ref, sha string }{
		{"an object that does not exist", "refs/bumper/dispatch/2-abc-1", strings.Repeat("a", 40)},
		{"a name that is not a ref", "refs/bumper/dispatch/2..x", head},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created, err := c.CreateRef(ctx, repo, tc.ref, tc.sha)
			if created || err == nil {
				t.Fatalf("create: %v, %v; want an error, not a ref that exists", created, err)
			}
		})
	}
}

// TestCreateRefThroughGitHubsFaults: a create-if-absent whose answer does not say who
// made the ref is settled by reading the ref. GitHub's own 422 race with nobody's ref
// behind it, and a 502, are tried again and end in a created ref; when every answer is
// a fault, the caller gets an error, never "another replica has it".
func TestCreateRefThroughGitHubsFaults(t *testing.T) {
	ctx := context.Background()
	seed := uint64(7)
	for _, tc := range []struct {
		name    string
		rule    faults.RESTRule
		created bool
	}{
		{"a third of the creates race", faults.RESTRule{Route: "/repos/{owner}/{repo}/git/refs", Methods: []string{"POST"}, Race: 0.3}, true},
		{"a third of the creates meet a 502", faults.RESTRule{Route: "/repos/{owner}/{repo}/git/refs", Methods: []string{"POST"}, BadGateway: 0.3}, true},
		{"every create races", faults.RESTRule{Route: "/repos/{owner}/{repo}/git/refs", Methods: []string{"POST"}, Race: 1}, false},
		{"every create meets a 503", faults.RESTRule{Route: "/repos/{owner}/{repo}/git/refs", Methods: []string{"POST"}, Unavailable: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, repo := clientOf(t, ghemu.Options{Faults: &ghemu.FaultsConfig{Seed: &seed, REST: []faults.RESTRule{tc.rule}}})
			head, err := c.BranchHead(ctx, repo, "main")
			if err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				ref := fmt.Sprintf("refs/bumper/dispatch/%d-abc-1", i+1)
				created, err := c.CreateRef(ctx, repo, ref, head)
				if tc.created && (!created || err != nil) {
					t.Fatalf("%s: %v, %v; want created", ref, created, err)
				}
				if !tc.created && (created || err == nil) {
					t.Fatalf("%s: %v, %v; want an error, not a ref that exists", ref, created, err)
				}
			}
		})
	}
}

// TestCommentsOfMissingIssue: listing the comments of an issue that does not exist is
// GitHub's 404, which the domain reads as "no work item".
func TestCommentsOfMissingIssue(t *testing.T) {
	c, repo := client(t)
	if _, err := c.Comments(context.Background(), repo, 999); !errors.Is(err, workitem.ErrNotFound) {
		t.Fatalf("comments of #999: %v; want workitem.ErrNotFound", err)
	}
}

// TestOpenPulls: the open pull requests into one base branch, with their head
// repository and branch, which is how a push to the base finds the work items it
// concerns; closed ones and those into other branches are not listed.
func TestOpenPulls(t *testing.T) {
	ctx := context.Background()
	e := emutest.New(t, ghemu.Options{})
	tok := emutest.InstallationToken(t, e, ghemu.DefaultOrg, ghemu.DefaultRepo, map[string]string{"pull_requests": "read"})
	gh := gogithub.NewClient(nil).WithAuthToken(tok)
	base, err := url.Parse(strings.TrimRight(e.BaseURL(), "/") + "/")
	if err != nil {
		t.Fatal(err)
	}
	gh.BaseURL = base
	c, repo := &Client{gh: gh}, ghemu.DefaultOrg+"/"+ghemu.DefaultRepo
	bot := emutest.InstallationClient(t, e)
	refs, err := e.Git().Refs(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		t.Fatal(err)
	}
	open := func(branch, into string) int {
		t.Helper()
		if err := e.Git().UpdateRef(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "refs/heads/"+branch, refs["refs/heads/main"], ""); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Git().CommitFiles(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, branch, refs["refs/heads/main"], map[string][]byte{branch + ".txt": []byte("x")}, "Add "+branch,
			gitserver.Signature{Name: "bumper", Email: "bumper@example.test"}); err != nil {
			t.Fatal(err)
		}
		pr, resp, err := bot.PullRequests.Create(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.NewPullRequest{
			Title: gogithub.String(branch), Head: gogithub.String(branch), Base: gogithub.String(into)})
		emutest.WantStatus(t, resp, err, 201)
		return pr.GetNumber()
	}
	if err := e.Git().UpdateRef(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "refs/heads/release", refs["refs/heads/main"], ""); err != nil {
		t.Fatal(err)
	}
	first, second := open("bumper/1-1", "main"), open("bumper/2-1", "main")
	open("bumper/3-1", "release")
	closed := open("bumper/4-1", "main")
	_, resp, err := bot.PullRequests.Edit(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, closed, &gogithub.PullRequest{State: gogithub.String("closed")})
	emutest.WantStatus(t, resp, err, 200)
	pulls, err := c.OpenPulls(ctx, repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pulls {
		got = append(got, fmt.Sprintf("#%d %s:%s into %s", p.Number, p.HeadRepo, p.HeadRef, p.BaseRef))
	}
	want := []string{fmt.Sprintf("#%d %s:bumper/1-1 into main", first, repo), fmt.Sprintf("#%d %s:bumper/2-1 into main", second, repo)}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("open pull requests into main: %q, want %q", got, want)
	}
}
