package app

import (
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
)

// gatesForReview puts a work item's pull request in review with bumper/gates failing on
// its head, as the runner leaves it when a finding needs a person, and returns it with a
// reader of the App's latest bumper/gates there.
func (h *harness) gatesForReview(t *testing.T) (inReview, func() *gogithub.CheckRun) {
	t.Helper()
	r := h.toReview()
	runner := gogithub.NewClient(nil).WithAuthToken(r.implGrant.InstallationToken)
	runner.BaseURL = mustURL(h.e.BaseURL() + "/")
	if _, _, err := runner.Checks.CreateCheckRun(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, gogithub.CreateCheckRunOptions{
		Name: workitem.CheckGates, HeadSHA: r.head, Status: gogithub.String("completed"), Conclusion: gogithub.String("failure"),
		Output: &gogithub.CheckRunOutput{Title: gogithub.String("1 finding(s) need a person"), Summary: gogithub.String("- **review** protected_paths at `.claude/settings.json`")}}); err != nil {
		t.Fatal(err)
	}
	return r, func() *gogithub.CheckRun {
		t.Helper()
		res, _, err := h.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.head,
			&gogithub.ListCheckRunsOptions{CheckName: gogithub.String(workitem.CheckGates), AppID: gogithub.Int64(h.e.AppID()), Filter: gogithub.String("latest")})
		if err != nil || len(res.CheckRuns) == 0 {
			t.Fatalf("the App's %s on the head: %v, %v", workitem.CheckGates, res, err)
		}
		return res.CheckRuns[0]
	}
}

// approveHead is who's approving review of the pull request's head, once serve has
// taken it; it returns the review's ID.
func (h *harness) approveHead(t *testing.T, r inReview, who string) int64 {
	t.Helper()
	rv, _, err := h.user(who).PullRequests.CreateReview(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr,
		&gogithub.PullRequestReviewRequest{Event: gogithub.String("APPROVE"), CommitID: gogithub.String(r.head)})
	if err != nil {
		t.Fatalf("%s's approval: %v", who, err)
	}
	h.settle()
	return rv.GetID()
}

// TestGatesClearedByApproval: the runner left bumper/gates failing on the pull
// request's head (findings for a person). A reader's approval changes nothing; the
// maintainer's approving review of that head turns it green, posted by the App with
// who approved, and the findings kept.
func TestGatesClearedByApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r, gatesCheck := h.gatesForReview(t)
	h.approveHead(t, r, ghemu.DefaultReader)
	if c := gatesCheck(); c.GetConclusion() != "failure" {
		t.Fatalf("a reader's approval cleared the gates: %s %q", c.GetConclusion(), c.GetOutput().GetTitle())
	}
	h.approveHead(t, r, ghemu.DefaultMaintainer)
	c := gatesCheck()
	if c.GetConclusion() != "success" || c.GetApp().GetID() != h.e.AppID() {
		t.Fatalf("after the maintainer's approval: %s by App %d", c.GetConclusion(), c.GetApp().GetID())
	}
	for _, want := range []string{"`" + ghemu.DefaultMaintainer + "`", "`.claude/settings.json`"} {
		if !strings.Contains(c.GetOutput().GetSummary(), want) {
			t.Errorf("the cleared check's summary does not name %s:\n%s", want, c.GetOutput().GetSummary())
		}
	}
}
