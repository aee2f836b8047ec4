package app

import (
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
)

// TestGatesDismissedApproval attacks the clearance of bumper/gates as someone who got a
// writer's approval and then had it withdrawn: the maintainer approves the head
// (clearing the findings) and the approval is dismissed ("approved by mistake"). While
// another writer's approval of that head stands, the gates stay cleared, naming that
// writer; once no approval stands, the App posts the findings as failed again, and a
// new approval clears them once more.
func TestGatesDismissedApproval(t *testing.T) {
	const second = "second-writer"
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: second})
	seed.Repositories[0].Collaborators[second] = "write"
	h := newHarness(t, seed)
	r := h.toReview()
	runner := gogithub.NewClient(nil).WithAuthToken(r.implGrant.InstallationToken)
	runner.BaseURL = mustURL(h.e.BaseURL() + "/")
	if _, _, err := runner.Checks.CreateCheckRun(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, gogithub.CreateCheckRunOptions{
		Name: workitem.CheckGates, HeadSHA: r.head, Status: gogithub.String("completed"), Conclusion: gogithub.String("failure"),
		Output: &gogithub.CheckRunOutput{Title: gogithub.String("1 finding(s) need a person"), Summary: gogithub.String("- **review** protected_paths at `.claude/settings.json`")}}); err != nil {
		t.Fatal(err)
	}
	gates := func() *gogithub.CheckRun {
		t.Helper()
		res, _, err := h.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.head,
			&gogithub.ListCheckRunsOptions{CheckName: gogithub.String(workitem.CheckGates), AppID: gogithub.Int64(h.e.AppID()), Filter: gogithub.String("latest")})
		if err != nil || len(res.CheckRuns) == 0 {
			t.Fatalf("the App's %s: %v %v", workitem.CheckGates, res, err)
		}
		return res.CheckRuns[0]
	}
	approve := func(who string) int64 {
		t.Helper()
		rv, _, err := h.user(who).PullRequests.CreateReview(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr,
			&gogithub.PullRequestReviewRequest{Event: gogithub.String("APPROVE"), CommitID: gogithub.String(r.head)})
		if err != nil {
			t.Fatal(err)
		}
		h.settle()
		return rv.GetID()
	}
	dismiss := func(id int64) {
		t.Helper()
		if _, _, err := h.user(ghemu.DefaultMaintainer).PullRequests.DismissReview(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr, id,
			&gogithub.PullRequestReviewDismissalRequest{Message: gogithub.String("approved by mistake")}); err != nil {
			t.Fatal(err)
		}
		h.settle()
	}
	want := func(step, conclusion, names string) {
		t.Helper()
		c := gates()
		if c.GetConclusion() != conclusion || !strings.Contains(c.GetOutput().GetSummary(), names) || !strings.Contains(c.GetOutput().GetSummary(), "`.claude/settings.json`") {
			t.Fatalf("%s: bumper/gates %s, want %s naming %s:\n%s", step, c.GetConclusion(), conclusion, names, c.GetOutput().GetSummary())
		}
	}
	mine := approve(ghemu.DefaultMaintainer)
	theirs := approve(second)
	want("two writers approved", "success", "`"+ghemu.DefaultMaintainer+"`")
	dismiss(mine)
	want("the clearing approval dismissed, another standing", "success", "`"+second+"`")
	dismiss(theirs)
	want("no approval standing", "failure", "was dismissed")
	approve(ghemu.DefaultMaintainer)
	want("approved again", "success", "`"+ghemu.DefaultMaintainer+"`")
	if s := gates().GetOutput().GetSummary(); strings.Contains(s, "was dismissed") {
		t.Errorf("the new clearance still speaks of the dismissal:\n%s", s)
	}
}
