package workitemtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/workitem"
)

// TestBehavesAsGitHub checks the answers the App's rules rely on, as GitHub documents
// them: a fake that answered otherwise would let the workitem tests pass against a
// GitHub that does not exist.
func TestBehavesAsGitHub(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 6, 1, 9, 0, 0, 700, time.UTC)
	g := New(Options{Now: func() time.Time { return now }, Permissions: map[string]string{"contents": "write", "checks": "read"}})
	g.AddRepo("acme/widgets", "main", map[string]string{"a.txt": "a"})
	g.AddWorkflow("acme/widgets", "run.yml", "work_item", "nonce")
	gh := g.Client()
	main := g.Head("acme/widgets", "main")
	n := g.OpenIssue("acme/widgets", "alice", "t", "b")
	g.Commit("acme/widgets", "bumper/1-1", map[string]string{"a.txt": "b"})
	pr := g.OpenPull("acme/widgets", workitem.Pull{Author: g.Bot(), HeadRef: "bumper/1-1"},
		workitem.PullFile{Path: "a.txt", Patch: "@@ -1 +1 @@\n-a\n+b"})
	if n != 1 || pr != 2 {
		t.Fatalf("issue #%d, pull request #%d: issues and pull requests share numbers", n, pr)
	}
	unprocessable := func(err error) bool {
		var se *StatusError
		return errors.As(err, &se) && se.Code == 422
	}
	cases := []struct {
		name string
		call func() error
		want func(error) bool
	}{
		{"a new ref is created", func() error {
			if ok, err := gh.CreateRef(ctx, "acme/widgets", "refs/bumper/x", main); !ok || err != nil {
				return errors.New("not created")
			}
			return nil
		}, func(err error) bool { return err == nil }},
		{"an existing ref is reported, not an error", func() error {
			if ok, err := gh.CreateRef(ctx, "acme/widgets", "refs/bumper/x", main); ok || err != nil {
				return errors.New("created twice")
			}
			return nil
		}, func(err error) bool { return err == nil }},
		{"a malformed ref name is 422", func() error { _, err := gh.CreateRef(ctx, "acme/widgets", "refs/x", main); return err }, unprocessable},
		{"a ref at an unknown commit is 422", func() error {
			_, err := gh.CreateRef(ctx, "acme/widgets", "refs/bumper/y", "0123456789012345678901234567890123456789")
			return err
		}, unprocessable},
		{"a dispatch with an undeclared input is 422", func() error {
			_, err := gh.Dispatch(ctx, "acme/widgets", "run.yml", "main", map[string]string{"work_item": "w", "nonce": "n", "extra": "x"})
			return err
		}, unprocessable},
		{"a dispatch missing an input is 422", func() error {
			_, err := gh.Dispatch(ctx, "acme/widgets", "run.yml", "main", map[string]string{"work_item": "w"})
			return err
		}, unprocessable},
		{"a dispatch of a workflow not on the ref is 404", func() error {
			_, err := gh.Dispatch(ctx, "acme/widgets", "other.yml", "main", map[string]string{})
			return err
		}, func(err error) bool { return errors.Is(err, workitem.ErrNotFound) }},
		{"removing an absent label succeeds", func() error { return gh.RemoveLabel(ctx, "acme/widgets", n, "nope") }, func(err error) bool { return err == nil }},
		{"a deleted comment is 404", func() error {
			id, err := gh.CreateComment(ctx, "acme/widgets", n, "hi")
			if err != nil {
				return err
			}
			g.DeleteComment("acme/widgets", id)
			_, err = gh.Comment(ctx, "acme/widgets", id)
			return err
		}, func(err error) bool { return errors.Is(err, workitem.ErrNotFound) }},
		{"approving one's own pull request is 422", func() error {
			_, err := gh.CreateReview(ctx, "acme/widgets", pr, workitem.Review{Event: "APPROVE"})
			return err
		}, unprocessable},
		{"requesting changes on one's own pull request is 422", func() error {
			_, err := gh.CreateReview(ctx, "acme/widgets", pr, workitem.Review{Event: "REQUEST_CHANGES", Body: "no"})
			return err
		}, unprocessable},
		{"a review comment off the diff is 422", func() error {
			_, err := gh.CreateReview(ctx, "acme/widgets", pr, workitem.Review{Event: "COMMENT", Body: "x",
				Comments: []workitem.ReviewComment{{Path: "a.txt", Line: 2, Side: "RIGHT", Body: "x"}}})
			return err
		}, unprocessable},
		{"a review comment on the diff is taken", func() error {
			_, err := gh.CreateReview(ctx, "acme/widgets", pr, workitem.Review{Event: "COMMENT", Body: "x",
				Comments: []workitem.ReviewComment{{Path: "a.txt", Line: 1, Side: "LEFT", Body: "x"}}})
			return err
		}, func(err error) bool { return err == nil }},
		{"an unprotected branch's protection is 404", func() error { _, err := gh.BranchProtection(ctx, "acme/widgets", "main"); return err },
			func(err error) bool { return errors.Is(err, workitem.ErrNotFound) }},
		{"a permission the installation lacks is 422", func() error {
			_, _, err := gh.RepoToken(ctx, "acme/widgets", map[string]string{"checks": "write"})
			return err
		}, unprocessable},
		{"a user with no role has none", func() error {
			if p, err := gh.Permission(ctx, "acme/widgets", "bob"); p != "none" || err != nil {
				return errors.New(p)
			}
			return nil
		}, func(err error) bool { return err == nil }},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !tt.want(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("comment times are whole seconds", func(t *testing.T) {
		if _, err := gh.CreateComment(ctx, "acme/widgets", n, "status"); err != nil {
			t.Fatal(err)
		}
		cs, err := gh.Comments(ctx, "acme/widgets", n)
		if err != nil || len(cs) == 0 || cs[0].CreatedAt.Nanosecond() != 0 || cs[0].Author != g.Bot() || cs[0].AuthorType != "Bot" {
			t.Fatalf("comments %+v, %v", cs, err)
		}
	})
	t.Run("check runs: the latest of each name, newest first", func(t *testing.T) {
		head := g.Head("acme/widgets", "bumper/1-1")
		g.CheckResult("acme/widgets", workitem.CheckRun{Name: "ci", HeadSHA: head, Conclusion: "failure"}, 7)
		g.CheckResult("acme/widgets", workitem.CheckRun{Name: "ci", HeadSHA: head, Conclusion: "success"}, 7)
		g.CheckResult("acme/widgets", workitem.CheckRun{Name: "ci", HeadSHA: head, Conclusion: "failure"}, 8)
		runs, err := gh.CheckRuns(ctx, "acme/widgets", head)
		if err != nil || len(runs) != 2 || runs[0].AppID != 8 || runs[1].Conclusion != "success" {
			t.Fatalf("check runs %+v, %v", runs, err)
		}
	})
	t.Run("failures are injected per method, and staged hooks run first", func(t *testing.T) {
		boom := errors.New("boom")
		g.FailNext("BranchHead", boom)
		ran := false
		g.Before("BranchHead", func() { ran = true })
		if _, err := gh.BranchHead(ctx, "acme/widgets", "main"); !errors.Is(err, boom) || !ran {
			t.Fatalf("got %v, hook ran %v", err, ran)
		}
		if _, err := gh.BranchHead(ctx, "acme/widgets", "main"); err != nil {
			t.Fatalf("FailNext failed twice: %v", err)
		}
		g.Fail("Issue", boom)
		for range 2 {
			if _, err := gh.Issue(ctx, "acme/widgets", n); !errors.Is(err, boom) {
				t.Fatalf("got %v", err)
			}
		}
		g.Heal("Issue")
		if _, err := gh.Issue(ctx, "acme/widgets", n); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if recover() == nil {
				t.Fatal("a misspelt method was accepted")
			}
		}()
		g.FailNext("Dispatches", boom)
	})
	t.Run("a repository the App left is 404", func(t *testing.T) {
		g.Uninstall("acme/widgets")
		if _, err := gh.Issue(ctx, "acme/widgets", n); !errors.Is(err, workitem.ErrNotFound) {
			t.Fatalf("got %v", err)
		}
		if _, err := g.ForRepository(ctx, "acme/widgets"); !errors.Is(err, workitem.ErrNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestConversationAsGitHub checks the fake's reviews, threads and merges against what
// GitHub documents: a single comment is a review of its own, a reply answers its
// thread's first comment, mergeability is computed after either branch moved (the first
// read says nothing yet), and update-branch refuses a stale head and an up-to-date
// branch, and otherwise merges as the App, the push coming back as synchronize.
func TestConversationAsGitHub(t *testing.T) {
	ctx := context.Background()
	g := New(Options{})
	g.AddRepo("acme/widgets", "main", map[string]string{"a.txt": "a", "b.txt": "b"})
	gh := g.Client()
	g.Commit("acme/widgets", "bumper/1-1", map[string]string{"a.txt": "A"})
	pr := g.OpenPull("acme/widgets", workitem.Pull{Author: g.Bot(), HeadRef: "bumper/1-1"}, workitem.PullFile{Path: "a.txt", Patch: "@@ -1 +1 @@\n-a\n+A"})

	ev, first := g.Review("acme/widgets", pr, "alice", "COMMENTED", "", Inline{Path: "a.txt", Line: 1, Body: "why?"})
	root := g.CommentsOf("acme/widgets", first)[0]
	_, second := g.Review("acme/widgets", pr, "bob", "COMMENTED", "", Inline{InReplyTo: root, Body: "because"})
	reply := g.CommentsOf("acme/widgets", second)[0]
	_, third := g.Review("acme/widgets", pr, "alice", "COMMENTED", "", Inline{InReplyTo: reply, Body: "ok"})
	cs, err := gh.PullComments(ctx, "acme/widgets", pr)
	if err != nil || len(cs) != 3 || cs[1].InReplyTo != root || cs[2].InReplyTo != root || cs[2].ReviewID != third || cs[1].Path != "a.txt" {
		t.Fatalf("review comments %+v, %v; a reply answers the thread's first comment", cs, err)
	}
	if ev.Action != "submitted" || ev.Review.State != "COMMENTED" || ev.Review.ID != first || ev.HeadRef != "bumper/1-1" {
		t.Fatalf("a single comment's webhook %+v", ev)
	}
	if rv, err := gh.Review(ctx, "acme/widgets", pr, first); err != nil || rv.User != "alice" || rv.SubmittedAt.IsZero() {
		t.Fatalf("review %+v, %v", rv, err)
	}

	read := func() workitem.Pull {
		p, err := gh.PullRequest(ctx, "acme/widgets", pr)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := read(); p.Mergeable != nil || p.MergeableState != "unknown" {
		t.Fatalf("first read %+v: GitHub has not computed it yet", p)
	}
	if p := read(); p.Mergeable == nil || !*p.Mergeable || p.MergeableState != "clean" {
		t.Fatalf("second read %+v", p)
	}
	g.PushBase("acme/widgets", "main", "carol", map[string]string{"b.txt": "B"})
	if err := gh.UpdateBranch(ctx, "acme/widgets", pr, "0123456789012345678901234567890123456789"); !isUnprocessable(err) {
		t.Fatalf("update-branch of a stale head: %v; want 422", err)
	}
	head := read().HeadSHA
	if err := gh.UpdateBranch(ctx, "acme/widgets", pr, head); err != nil {
		t.Fatal(err)
	}
	sent := g.Sent()
	if len(sent) != 1 || sent[0].Action != "synchronize" || sent[0].Sender != g.Bot() || sent[0].After == head {
		t.Fatalf("update-branch's push %+v", sent)
	}
	if a, err := gh.File(ctx, "acme/widgets", "b.txt", sent[0].After); err != nil || string(a) != "B" {
		t.Fatalf("the merge's b.txt %q, %v", a, err)
	}
	if err := gh.UpdateBranch(ctx, "acme/widgets", pr, sent[0].After); !isUnprocessable(err) {
		t.Fatalf("update-branch of an up-to-date branch: %v; want 422", err)
	}
	g.PushBase("acme/widgets", "main", "carol", map[string]string{"a.txt": "aa"})
	read()
	if p := read(); p.Mergeable == nil || *p.Mergeable || p.MergeableState != "dirty" {
		t.Fatalf("both sides changed a.txt: %+v", p)
	}
}

func isUnprocessable(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == 422
}
