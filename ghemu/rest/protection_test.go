package rest_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestBranchProtection(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)

	t.Run("the seeded protection is rendered", func(t *testing.T) {
		p, _, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		rs := p.GetRequiredStatusChecks()
		if p.GetRequiredPullRequestReviews().RequiredApprovingReviewCount != 1 || rs == nil ||
			!slices.Equal(*rs.Contexts, []string{"bumper/verdict"}) || len(*rs.Checks) != 1 ||
			p.GetEnforceAdmins().Enabled || p.GetRequiredPullRequestReviews().GetBypassPullRequestAllowances() != nil {
			t.Errorf("protection = %+v", p)
		}
	})
	t.Run("an unprotected branch is 404 Branch not protected", func(t *testing.T) {
		emutest.BranchWithCommit(t, e, "loose", "l.txt")
		_, resp, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "loose")
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
		if !errors.Is(err, github.ErrBranchNotProtected) { // go-github knows it by GitHub's message
			t.Errorf("error = %v", err)
		}
	})
	t.Run("the control sets and removes protection", func(t *testing.T) {
		if err := e.SetBranchProtection(org, repo, ghemu.SeedProtection{Branch: "loose", RequiredReviews: 2,
			EnforceAdmins: true, BypassApps: []string{ghemu.DefaultAppSlug}}); err != nil {
			t.Fatal(err)
		}
		p, _, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "loose")
		if err != nil {
			t.Fatal(err)
		}
		by := p.GetRequiredPullRequestReviews().GetBypassPullRequestAllowances()
		if p.GetRequiredPullRequestReviews().RequiredApprovingReviewCount != 2 || !p.GetEnforceAdmins().Enabled ||
			by == nil || len(by.Apps) != 1 || by.Apps[0].GetSlug() != ghemu.DefaultAppSlug {
			t.Errorf("protection = %+v, bypass %+v", p, by)
		}
		if err := e.RemoveBranchProtection(org, repo, "loose"); err != nil {
			t.Fatal(err)
		}
		_, resp, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "loose")
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
		if err := e.RemoveBranchProtection(org, repo, "loose"); err == nil {
			t.Error("removing a protection twice succeeded")
		}
		// The same through the control route, for tests that drive the emulator over HTTP.
		ctl := e.BaseURL() + "/_emulator/repos/" + org + "/" + repo + "/branches/loose/protection"
		for _, step := range []struct {
			method, body string
			want         int
		}{
			{http.MethodPut, `{"required_reviews":1,"bypass_apps":["bumper"]}`, http.StatusNoContent},
			{http.MethodDelete, "", http.StatusNoContent},
			{http.MethodDelete, "", http.StatusUnprocessableEntity},
		} {
			req, err := http.NewRequestWithContext(ctx, step.method, ctl, strings.NewReader(step.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != step.want {
				t.Errorf("%s %s = %d, want %d", step.method, ctl, resp.StatusCode, step.want)
			}
		}
		for _, bad := range []ghemu.SeedProtection{
			{Branch: "loose", BypassApps: []string{"stranger"}},
			{Branch: "absent"},
			{Branch: "loose", RequiredReviews: 7},
		} {
			if err := e.SetBranchProtection(org, repo, bad); err == nil {
				t.Errorf("SetBranchProtection(%+v) succeeded", bad)
			}
		}
	})
}

func TestBypassAppMerge(t *testing.T) {
	tests := []struct {
		name   string
		bypass []string
		check  bool
		want   int
	}{
		{"a bypass App merges without an approving review", []string{ghemu.DefaultAppSlug}, true, http.StatusOK},
		{"a bypass App still needs the required checks", []string{ghemu.DefaultAppSlug}, false, http.StatusMethodNotAllowed},
		{"an App not in the list needs the review", nil, true, http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := emutest.New(t, ghemu.Options{Seed: pinningSeed()})
			ctx := emutest.Context(t)
			bot := emutest.InstallationClient(t, e)
			if err := e.SetBranchProtection(org, repo, ghemu.SeedProtection{Branch: "main",
				RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1, BypassApps: tt.bypass}); err != nil {
				t.Fatal(err)
			}
			head := emutest.BranchWithCommit(t, e, "bumper/1-1", "frob.txt")
			pr, _, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String("frob"),
				Head: github.String("bumper/1-1"), Base: github.String("main")})
			if err != nil {
				t.Fatal(err)
			}
			if tt.check {
				// Another App plays the CI system (the check is not pinned).
				if _, _, err := emutest.UserClient(t, e, otherApp+"[bot]").Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{
					Name: "bumper/verdict", HeadSHA: head, Conclusion: github.String("success")}); err != nil {
					t.Fatal(err)
				}
			}
			_, resp, err := bot.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
			emutest.WantStatus(t, resp, err, tt.want)
		})
	}
}
