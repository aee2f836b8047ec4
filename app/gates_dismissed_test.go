package app

import (
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

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
	r, gates := h.gatesForReview(t)
	approve := func(who string) int64 { return h.approveHead(t, r, who) }
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
