package report_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/ghclient"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/report"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

const (
	org      = ghemu.DefaultOrg
	repoName = ghemu.DefaultRepo
	repo     = org + "/" + repoName
	person   = ghemu.DefaultMaintainer
	bot      = ghemu.DefaultAppSlug + "[bot]"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// world is the emulator with the work items a test seeds, as serve and people would
// have left them: issues opened by a maintainer, approved, their status comments and
// state labels written by the App, pull requests opened by the App from commits by its
// bot, some with a person's commits on top, merged or closed by the maintainer.
type world struct {
	t      *testing.T
	ctx    context.Context
	e      *ghemu.Emulator
	inst   *gogithub.Client // the App's installation
	maint  *gogithub.Client // the maintainer
	sealer *ledger.Sealer
	recs   map[int]*ledger.Record
	cids   map[int]int64 // status comment of each issue
}

func newWorld(t *testing.T) *world {
	t.Helper()
	e := emutest.New(t, ghemu.Options{})
	// Merging here is the maintainer's act, not what protection asks of it.
	if err := e.RemoveBranchProtection(org, repoName, "main"); err != nil {
		t.Fatal(err)
	}
	s, err := ledger.NewSealer(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: emutest.Context(t), e: e, inst: emutest.InstallationClient(t, e),
		maint: emutest.UserClient(t, e, person), sealer: s, recs: map[int]*ledger.Record{}, cids: map[int]int64{}}
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// seedItem is one work item to seed: its runs' costs (the first an implementation
// attempt, the others fix rounds), whether a person pushes to its pull request, and
// how the pull request ends ("merged", "closed" or "open").
type seedItem struct {
	costs  []int64
	person bool
	end    string
}

// seed opens the issue, approves it, has the App open the pull request from its bot's
// commit (and the person push one), writes the record and ends the pull request.
func (w *world) seed(si seedItem) int {
	w.t.Helper()
	title := fmt.Sprintf("Item %d", len(w.recs)+1)
	is, _, err := w.maint.Issues.Create(w.ctx, org, repoName, &gogithub.IssueRequest{Title: gogithub.String(title), Body: gogithub.String("Make it so.")})
	w.must(err)
	n := is.GetNumber()
	approve, _, err := w.maint.Issues.CreateComment(w.ctx, org, repoName, n, &gogithub.IssueComment{Body: gogithub.String("/approve")})
	w.must(err)
	main, _, err := w.inst.Git.GetRef(w.ctx, org, repoName, "heads/main")
	w.must(err)
	base := main.GetObject().GetSHA()
	rec := &ledger.Record{Schema: ledger.SchemaVersion, Revision: 1, Repository: repo, Issue: n, State: ledger.InReview,
		Requester: person, SpecRevision: ledger.SpecRevision(title, "Make it so."), BaseBranch: "main", BaseCommit: base,
		PolicyVersion: ledger.DefaultPolicyVersion, WorkBranch: fmt.Sprintf("bumper/%d-1", n), UpdatedAt: time.Now().UTC()}
	rev := rec.ApprovalRevision()
	// Approved three hours before the pull request opens.
	rec.Approvals = []ledger.Approval{{Approval: wire.Approval{By: person, At: time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second),
		Revision: rev, CommentID: approve.GetID()}}}
	for i, c := range si.costs {
		stage := wire.Stage(wire.StageImplement)
		if i > 0 {
			stage = wire.StageFix
		}
		nonce := sha256.Sum256(fmt.Appendf(nil, "%d-%d", n, i))
		rec.Attempts = append(rec.Attempts, ledger.Attempt{Number: i + 1, Stage: stage, Revision: rev, NonceHash: "sha256:" + hex.EncodeToString(nonce[:]),
			StartedAt: rec.Approvals[0].At, EndedAt: rec.Approvals[0].At.Add(time.Hour), Outcome: "success", CostMicroUSD: c})
	}
	// The bot's commit, through the Git Data API as the App's installation.
	blob, _, err := w.inst.Git.CreateBlob(w.ctx, org, repoName, &gogithub.Blob{Content: gogithub.String(title + "\n"), Encoding: gogithub.String("utf-8")})
	w.must(err)
	tree, _, err := w.inst.Git.CreateTree(w.ctx, org, repoName, base, []*gogithub.TreeEntry{{Path: gogithub.String(fmt.Sprintf("item%d.txt", n)),
		Mode: gogithub.String("100644"), Type: gogithub.String("blob"), SHA: blob.SHA}})
	w.must(err)
	ident := &gogithub.CommitAuthor{Name: gogithub.String(bot), Email: gogithub.String(fmt.Sprintf("%d+%s@users.noreply.github.com", ghemu.DefaultAppID, bot)),
		Date: &gogithub.Timestamp{Time: time.Now().UTC().Truncate(time.Second)}}
	commit, _, err := w.inst.Git.CreateCommit(w.ctx, org, repoName, &gogithub.Commit{Message: gogithub.String(title), Tree: tree,
		Parents: []*gogithub.Commit{{SHA: gogithub.String(base)}}, Author: ident, Committer: ident}, nil)
	w.must(err)
	_, _, err = w.inst.Git.CreateRef(w.ctx, org, repoName, &gogithub.Reference{Ref: gogithub.String("refs/heads/" + rec.WorkBranch), Object: &gogithub.GitObject{SHA: commit.SHA}})
	w.must(err)
	pr, _, err := w.inst.PullRequests.Create(w.ctx, org, repoName, &gogithub.NewPullRequest{Title: gogithub.String(title),
		Head: gogithub.String(rec.WorkBranch), Base: gogithub.String("main"), Body: gogithub.String(fmt.Sprintf("Closes #%d", n))})
	w.must(err)
	rec.PullRequest, rec.PullHead = pr.GetNumber(), commit.GetSHA()
	if si.person {
		_, err := w.e.PushCommit(w.ctx, org, repoName, rec.WorkBranch, map[string][]byte{fmt.Sprintf("item%d.txt", n): []byte("fixed by hand\n")}, "Fix by hand", person)
		w.must(err)
	}
	w.recs[n] = rec
	body, err := w.sealer.Encode(rec)
	w.must(err)
	cm, _, err := w.inst.Issues.CreateComment(w.ctx, org, repoName, n, &gogithub.IssueComment{Body: gogithub.String(body)})
	w.must(err)
	w.cids[n] = cm.GetID()
	_, _, err = w.inst.Issues.AddLabelsToIssue(w.ctx, org, repoName, n, []string{rec.State.Label()})
	w.must(err)
	switch si.end {
	case "merged":
		w.merge(n)
	case "closed":
		_, _, err := w.maint.PullRequests.Edit(w.ctx, org, repoName, rec.PullRequest, &gogithub.PullRequest{State: gogithub.String("closed")})
		w.must(err)
		w.move(n, ledger.Stopped)
	}
	return n
}

// merge has the maintainer merge the item's pull request, and the App end the item.
func (w *world) merge(n int) {
	w.t.Helper()
	_, _, err := w.maint.PullRequests.Merge(w.ctx, org, repoName, w.recs[n].PullRequest, "", nil)
	w.must(err)
	w.move(n, ledger.Done)
}

// move writes the item's record in a new state and moves its label, as serve does.
func (w *world) move(n int, to ledger.State) {
	w.t.Helper()
	rec := w.recs[n]
	from := rec.State
	w.must(rec.MoveTo(to, ""))
	rec.Revision++
	body, err := w.sealer.Encode(rec)
	w.must(err)
	_, _, err = w.inst.Issues.EditComment(w.ctx, org, repoName, w.cids[n], &gogithub.IssueComment{Body: gogithub.String(body)})
	w.must(err)
	_, _, err = w.inst.Issues.AddLabelsToIssue(w.ctx, org, repoName, n, []string{to.Label()})
	w.must(err)
	_, err = w.inst.Issues.RemoveLabelForIssue(w.ctx, org, repoName, n, from.Label())
	w.must(err)
}

// scope connects as `bumper report` does: with the App's credentials, as serve's
// configuration gives them.
func (w *world) scope(repoArg, orgArg string) ghclient.ReportScope {
	w.t.Helper()
	cc, err := githubapp.NewDefaultCachingClientCreator(githubapp.Config{V3APIURL: w.e.BaseURL() + "/",
		App: struct {
			IntegrationID int64  `yaml:"integration_id" json:"integrationId"`
			WebhookSecret string `yaml:"webhook_secret" json:"webhookSecret"`
			PrivateKey    string `yaml:"private_key" json:"privateKey"`
		}{IntegrationID: w.e.AppID(), PrivateKey: string(w.e.AppKeyPEM())}})
	w.must(err)
	s, err := ghclient.ConnectReport(w.ctx, cc, repoArg, orgArg)
	w.must(err)
	return s
}

func (w *world) report(s ghclient.ReportScope, sealer *ledger.Sealer) report.Report {
	w.t.Helper()
	items, err := report.Collect(w.ctx, s.GitHub, report.Options{Repositories: s.Repositories, Bot: s.Bot, Sealer: sealer})
	w.must(err)
	return report.Build(items, s.Repositories, time.Time{}, sealer != nil)
}

// TestReportOnEmulator: five items in one repository, three merged (one with the bot's
// commits only, two with a person's on top), one closed unmerged, one open. The report
// counts three accepted, one zero-touch, one pending, and what each merged pull request
// cost to the cent; once the open one merges, the report moves with it. --post keeps one
// issue up to date.
func TestReportOnEmulator(t *testing.T) {
	w := newWorld(t)
	var open int
	for _, si := range []seedItem{
		{costs: []int64{1_234_567}, end: "merged"},
		{costs: []int64{500_000, 250_000}, person: true, end: "merged"},
		{costs: []int64{2_000_000}, person: true, end: "merged"},
		{costs: []int64{3_333_333}, end: "closed"},
		{costs: []int64{700_001}, end: "open"},
	} {
		if n := w.seed(si); si.end == "open" {
			open = n
		}
	}
	s := w.scope(repo, "")
	if s.Bot != bot || len(s.Repositories) != 1 || s.Repositories[0] != repo {
		t.Fatalf("connected as %q to %v; want %q to [%s]", s.Bot, s.Repositories, bot, repo)
	}
	type want struct {
		merged, zeroTouch, closed, open, done int
		spend, perMerged                      string
	}
	check := func(t *testing.T, r report.Report, wt want) {
		t.Helper()
		tot := r.Total
		got := want{tot.Merged, tot.ZeroTouch, tot.ClosedUnmerged, tot.Open, tot.States[ledger.Done],
			report.USD(tot.SpendMicroUSD), report.USD(tot.SpendPerMerged())}
		if got != wt {
			t.Errorf("report %+v; want %+v", got, wt)
		}
		if tot.Items != 5 || tot.Runs != 6 || tot.Rounds != 1 || tot.Attempts != 5 || len(r.Problems) != 0 {
			t.Errorf("items %d runs %d rounds %d attempts %d problems %v; want 5, 6, 1, 5 and none", tot.Items, tot.Runs, tot.Rounds, tot.Attempts, r.Problems)
		}
		if d := tot.ApprovalToPull.P50; d < 3*time.Hour || d > 3*time.Hour+5*time.Minute {
			t.Errorf("approval to pull request p50 %v; want about 3h", d)
		}
		if tot.ApprovalToMerge.Count != wt.merged {
			t.Errorf("approval to merge measured on %d items; want %d", tot.ApprovalToMerge.Count, wt.merged)
		}
	}
	// Spend 8,017,901 micro-USD over 3 merged: 2,672,633.67 each.
	check(t, w.report(s, w.sealer), want{merged: 3, zeroTouch: 1, closed: 1, open: 1, done: 3, spend: "$8.02", perMerged: "$2.67"})

	// Without the key the records read, unverified; with another key none is trusted.
	unverified := w.report(s, nil)
	if unverified.Verified || unverified.Total.Merged != 3 || !strings.Contains(strings.Join(report.Notes(unverified), "\n"), "unverified") {
		t.Errorf("without the key: verified %v, merged %d, notes %q; want unverified, 3, and a note saying so", unverified.Verified, unverified.Total.Merged, report.Notes(unverified))
	}
	other, err := ledger.NewSealer([]byte("another key, also 32 bytes long!"))
	w.must(err)
	if r := w.report(s, other); r.Total.Unreadable != 5 || len(r.Problems) != 5 || r.Total.States[ledger.Done] != 3 {
		t.Errorf("with another key: %d unreadable, problems %v, %d done by label; want 5, 5 and 3", r.Total.Unreadable, r.Problems, r.Total.States[ledger.Done])
	}

	// --post: opened once, then left alone while the figures hold.
	body := report.Markdown(w.report(s, w.sealer))
	first, wrote, err := report.Post(w.ctx, s.GitHub, repo, body)
	if err != nil || !wrote {
		t.Fatalf("first post: %v, wrote %v", err, wrote)
	}
	if again, wrote, err := report.Post(w.ctx, s.GitHub, repo, body); err != nil || wrote || again != first {
		t.Fatalf("second post of the same figures: #%d, wrote %v, %v; want #%d untouched", again, wrote, err, first)
	}

	// The open pull request merges: the report moves, and so does the posted issue.
	w.merge(open)
	moved := w.report(s, w.sealer)
	// 8,017,901 over 4 merged: 2,004,475.25 each; the fifth was the bot's alone.
	check(t, moved, want{merged: 4, zeroTouch: 2, closed: 1, open: 0, done: 4, spend: "$8.02", perMerged: "$2.00"})
	if n, wrote, err := report.Post(w.ctx, s.GitHub, repo, report.Markdown(moved)); err != nil || !wrote || n != first {
		t.Fatalf("post after the merge: #%d, wrote %v, %v; want #%d edited", n, wrote, err, first)
	}
	posted, _, err := w.maint.Issues.ListByRepo(w.ctx, org, repoName, &gogithub.IssueListByRepoOptions{State: "all", Labels: []string{report.Label}})
	w.must(err)
	if len(posted) != 1 || !strings.Contains(posted[0].GetBody(), "| pull requests merged (accepted) | 4 |") {
		t.Fatalf("%d issues labeled %s; want one whose table says 4 merged:\n%s", len(posted), report.Label, posted[0].GetBody())
	}

	// The organization's scope reaches the same repository, and the report issue is no
	// work item.
	if r := w.report(w.scope("", org), w.sealer); r.Total.Items != 5 || r.Total.Merged != 4 {
		t.Errorf("by organization: %d items, %d merged; want 5 and 4", r.Total.Items, r.Total.Merged)
	}
}
