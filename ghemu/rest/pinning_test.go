package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// otherApp is another App of the pinning world, known by its bot user, with write
// access: it can create check runs of any name, as any App with checks: write can.
const otherApp = "renovate"

// pinningSeed is the default world plus another App's bot user with write access, and
// an App that may post commit statuses.
func pinningSeed() *ghemu.Seed {
	s := ghemu.DefaultSeed()
	s.Users = append(s.Users, ghemu.SeedUser{Login: otherApp + "[bot]", Bot: true})
	s.Repositories[0].Collaborators[otherApp+"[bot]"] = "write"
	s.App.Permissions = ghemu.DefaultAppPermissions()
	s.App.Permissions["statuses"] = "write"
	return s
}

// TestRequiredCheckPinning: a required check pinned to an App is met only by that App's
// check run; an unpinned one by any check run of its name or a commit status of its
// context, which any writer can forge.
func TestRequiredCheckPinning(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{Seed: pinningSeed()})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	other := emutest.UserClient(t, e, otherApp+"[bot]")

	// The sources of a passing "bumper/verdict" on a commit.
	sources := map[string]func(sha string) error{
		"a forged commit status": func(sha string) error {
			_, _, err := maint.Repositories.CreateStatus(ctx, org, repo, sha, &github.RepoStatus{
				State: github.String("success"), Context: github.String("bumper/verdict")})
			return err
		},
		"another App's check run": func(sha string) error {
			_, _, err := other.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{
				Name: "bumper/verdict", HeadSHA: sha, Conclusion: github.String("success")})
			return err
		},
		"the App's check run": func(sha string) error {
			_, _, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{
				Name: "bumper/verdict", HeadSHA: sha, Conclusion: github.String("success")})
			return err
		},
	}
	tests := []struct {
		pin    string // App slug bumper/verdict is pinned to; "" none
		source string
		met    bool
	}{
		{"", "a forged commit status", true},
		{"", "another App's check run", true},
		{"", "the App's check run", true},
		{ghemu.DefaultAppSlug, "a forged commit status", false},
		{ghemu.DefaultAppSlug, "another App's check run", false},
		{ghemu.DefaultAppSlug, "the App's check run", true},
		{otherApp, "the App's check run", false},
		{otherApp, "another App's check run", true},
	}
	for i, tt := range tests {
		name := fmt.Sprintf("pinned to %q, %s", tt.pin, tt.source)
		t.Run(name, func(t *testing.T) {
			p := ghemu.SeedProtection{Branch: "main", RequiredChecks: []string{"bumper/verdict"}}
			if tt.pin != "" {
				p.RequiredCheckApps = map[string]string{"bumper/verdict": tt.pin}
			}
			if err := e.SetBranchProtection(org, repo, p); err != nil {
				t.Fatal(err)
			}
			branch := fmt.Sprintf("pin-%d", i)
			head := emutest.BranchWithCommit(t, e, branch, branch+".txt")
			pr, _, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String(name),
				Head: github.String(branch), Base: github.String("main")})
			if err != nil {
				t.Fatal(err)
			}
			if err := sources[tt.source](head); err != nil {
				t.Fatalf("%s: %v", tt.source, err)
			}
			got, _, err := maint.PullRequests.Get(ctx, org, repo, pr.GetNumber())
			if err != nil {
				t.Fatal(err)
			}
			wantState, wantMerge := "blocked", http.StatusMethodNotAllowed
			if tt.met {
				wantState, wantMerge = "clean", http.StatusOK
			}
			if got.GetMergeableState() != wantState {
				t.Errorf("mergeable_state = %s, want %s", got.GetMergeableState(), wantState)
			}
			// maintainer has write, not admin: protection binds the merge.
			_, resp, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
			emutest.WantStatus(t, resp, err, wantMerge)
		})
	}
}

// TestRequiredCheckRendering: the protection API and the branch API render a pinned
// check with its App's ID and an unpinned one with app_id null, and contexts names both.
func TestRequiredCheckRendering(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{Seed: pinningSeed()})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	admin := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	otherID := otherAppID(t, e)

	t.Run("the default seed pins bumper/verdict to the App", func(t *testing.T) {
		p, _, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		checks := p.GetRequiredStatusChecks().GetChecks()
		if len(checks) != 1 || checks[0].Context != "bumper/verdict" || checks[0].AppID == nil || *checks[0].AppID != e.AppID() {
			t.Errorf("checks = %s", github.Stringify(checks))
		}
	})

	if err := e.SetBranchProtection(org, repo, ghemu.SeedProtection{Branch: "main",
		RequiredChecks:    []string{"bumper/verdict", "ci/test", "deps"},
		RequiredCheckApps: map[string]string{"bumper/verdict": ghemu.DefaultAppSlug, "deps": otherApp}}); err != nil {
		t.Fatal(err)
	}
	id := func(v int64) *int64 { return &v }
	want := []*github.RequiredStatusCheck{
		{Context: "bumper/verdict", AppID: id(e.AppID())},
		{Context: "ci/test"},
		{Context: "deps", AppID: id(otherID)},
	}
	same := func(got []*github.RequiredStatusCheck) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i].Context != want[i].Context || (got[i].AppID == nil) != (want[i].AppID == nil) ||
				got[i].AppID != nil && *got[i].AppID != *want[i].AppID {
				return false
			}
		}
		return true
	}
	t.Run("GET protection", func(t *testing.T) {
		p, _, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		rs := p.GetRequiredStatusChecks()
		if !same(rs.GetChecks()) || len(rs.GetContexts()) != 3 {
			t.Errorf("required_status_checks = %s, want checks %s", github.Stringify(rs), github.Stringify(want))
		}
	})
	t.Run("GET branch", func(t *testing.T) {
		b, _, err := admin.Repositories.GetBranch(ctx, org, repo, "main", 0)
		if err != nil {
			t.Fatal(err)
		}
		rs := b.GetProtection().GetRequiredStatusChecks()
		if !same(rs.GetChecks()) || len(rs.GetContexts()) != 3 {
			t.Errorf("protection.required_status_checks = %s, want checks %s", github.Stringify(rs), github.Stringify(want))
		}
	})
	t.Run("the control route takes the pin", func(t *testing.T) {
		resp := control(t, e, http.MethodPut, "/_emulator/repos/"+org+"/"+repo+"/branches/main/protection",
			`{"required_checks":["bumper/verdict"],"required_check_apps":{"bumper/verdict":"`+otherApp+`"}}`)
		if resp != http.StatusNoContent {
			t.Fatalf("PUT protection: %d", resp)
		}
		p, _, err := bot.Repositories.GetBranchProtection(ctx, org, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		checks := p.GetRequiredStatusChecks().GetChecks()
		if len(checks) != 1 || checks[0].AppID == nil || *checks[0].AppID != otherID {
			t.Errorf("checks = %s", github.Stringify(checks))
		}
	})
	t.Run("pins are validated", func(t *testing.T) {
		for _, p := range []ghemu.SeedProtection{
			{Branch: "main", RequiredChecks: []string{"ci/test"}, RequiredCheckApps: map[string]string{"bumper/verdict": ghemu.DefaultAppSlug}},
			{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredCheckApps: map[string]string{"bumper/verdict": "nobody"}},
		} {
			if err := e.SetBranchProtection(org, repo, p); err == nil {
				t.Errorf("SetBranchProtection(%+v) accepted", p.RequiredCheckApps)
			}
		}
	})
}

func otherAppID(t *testing.T, e *ghemu.Emulator) int64 {
	t.Helper()
	id, ok := e.AppIDBySlug(otherApp)
	if !ok {
		t.Fatalf("no App %s", otherApp)
	}
	return id
}

// control calls a control route and returns its status.
func control(t *testing.T, e *ghemu.Emulator, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCheckRunApp: a check run renders the App that created it; one saved without an
// App (when the emulator let people create check runs) renders as GitHub Actions'.
func TestCheckRunApp(t *testing.T) {
	dir := t.TempDir()
	e := emutest.New(t, ghemu.Options{Seed: pinningSeed(), StateDir: dir})
	ctx := emutest.Context(t)
	head := emutest.BranchWithCommit(t, e, "apps", "apps.txt")
	tests := []struct {
		name     string
		client   *github.Client
		wantID   int64
		wantSlug string
	}{
		{"an installation token's run is the App's", emutest.InstallationClient(t, e), e.AppID(), ghemu.DefaultAppSlug},
		{"another App's bot user's run is that App's", emutest.UserClient(t, e, otherApp+"[bot]"), otherAppID(t, e), otherApp},
	}
	var last int64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr, _, err := tt.client.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: tt.name, HeadSHA: head})
			if err != nil {
				t.Fatal(err)
			}
			if cr.GetApp().GetID() != tt.wantID || cr.GetApp().GetSlug() != tt.wantSlug {
				t.Errorf("app = %d %s, want %d %s", cr.GetApp().GetID(), cr.GetApp().GetSlug(), tt.wantID, tt.wantSlug)
			}
			last = cr.GetID()
		})
	}
	t.Run("a run saved without an App shows as GitHub Actions'", func(t *testing.T) {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "state.json")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		old := regexp.MustCompile(`,"app_id":[0-9]+,"app_slug":"` + otherApp + `"`)
		if !old.Match(raw) {
			t.Fatalf("the state holds no check run of %s", otherApp)
		}
		if err := os.WriteFile(path, old.ReplaceAll(raw, nil), 0o600); err != nil {
			t.Fatal(err)
		}
		e2 := emutest.New(t, ghemu.Options{StateDir: dir})
		cr, _, err := emutest.InstallationClient(t, e2).Checks.GetCheckRun(ctx, org, repo, last)
		if err != nil {
			t.Fatal(err)
		}
		if cr.GetApp().GetID() != 15368 || cr.GetApp().GetSlug() != "github-actions" {
			t.Errorf("app = %d %s, want GitHub Actions'", cr.GetApp().GetID(), cr.GetApp().GetSlug())
		}
	})
}

// TestCheckRunsAreApps: GitHub accepts check runs from Apps only. A person's token, a
// writer's or the repository owner's, is refused (403 "You must authenticate via a
// GitHub App."), to create a check run and to update one an App created; an
// installation token and another App's bot user may.
func TestCheckRunsAreApps(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{Seed: pinningSeed()})
	ctx := emutest.Context(t)
	head := emutest.BranchWithCommit(t, e, "people", "people.txt")
	bot := emutest.InstallationClient(t, e)
	mine, _, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: "bumper/verdict", HeadSHA: head,
		Conclusion: github.String("failure")})
	if err != nil {
		t.Fatal(err)
	}
	for _, login := range []string{ghemu.DefaultMaintainer, ghemu.DefaultReader} {
		person := emutest.UserClient(t, e, login)
		t.Run(login+" creates one", func(t *testing.T) {
			_, resp, err := person.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: "bumper/verdict", HeadSHA: head,
				Conclusion: github.String("success")})
			emutest.WantStatus(t, resp, err, http.StatusForbidden)
			if !strings.Contains(err.Error(), "You must authenticate via a GitHub App.") {
				t.Errorf("error = %v", err)
			}
		})
		t.Run(login+" updates the App's", func(t *testing.T) {
			_, resp, err := person.Checks.UpdateCheckRun(ctx, org, repo, mine.GetID(), github.UpdateCheckRunOptions{Name: "bumper/verdict",
				Conclusion: github.String("success")})
			emutest.WantStatus(t, resp, err, http.StatusForbidden)
		})
	}
	list, _, err := bot.Checks.ListCheckRunsForRef(ctx, org, repo, head, &github.ListCheckRunsOptions{Filter: github.String("all")})
	if err != nil || list.GetTotal() != 1 || list.CheckRuns[0].GetConclusion() != "failure" {
		t.Fatalf("check runs on the head: %s, %v; want the App's one, still failing", github.Stringify(list), err)
	}
	t.Run("Apps may", func(t *testing.T) {
		for _, c := range []*github.Client{bot, emutest.UserClient(t, e, otherApp+"[bot]")} {
			if _, _, err := c.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: "ci/test", HeadSHA: head}); err != nil {
				t.Error(err)
			}
		}
	})
}

// TestCommitStatuses: who may post a status, and the combined status of a commit.
func TestCommitStatuses(t *testing.T) {
	t.Parallel()
	// One request lacks its state on purpose; the emulator's answers are still checked.
	e := emutest.New(t, ghemu.Options{Seed: pinningSeed()}, emutest.AllowInvalidRequests())
	ctx := emutest.Context(t)
	head := emutest.BranchWithCommit(t, e, "statuses", "statuses.txt")
	noStatuses := emutest.InstallationToken(t, e, org, repo, map[string]string{"checks": "write"})
	post := []struct {
		name   string
		client *github.Client
		want   int
	}{
		{"a writer may post", emutest.UserClient(t, e, ghemu.DefaultMaintainer), http.StatusCreated},
		{"an installation with statuses: write may post", emutest.InstallationClient(t, e), http.StatusCreated},
		{"a reader may not", emutest.UserClient(t, e, ghemu.DefaultReader), http.StatusForbidden},
		{"a token without statuses may not", emutest.TokenClient(t, e, noStatuses), http.StatusForbidden},
	}
	for _, tt := range post {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := tt.client.Repositories.CreateStatus(ctx, org, repo, head, &github.RepoStatus{
				State: github.String("pending"), Context: github.String("ci/" + tt.name)})
			emutest.WantStatus(t, resp, err, tt.want)
		})
	}
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	t.Run("a status without a state is 422", func(t *testing.T) {
		_, resp, err := maint.Repositories.CreateStatus(ctx, org, repo, head, &github.RepoStatus{Context: github.String("x")})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
	})
	t.Run("the combined status takes each context's latest", func(t *testing.T) {
		for _, s := range []struct{ state, context string }{
			{"success", "ci/a writer may post"}, {"success", "CI/an installation with statuses: write may post"},
		} {
			st, _, err := maint.Repositories.CreateStatus(ctx, org, repo, head, &github.RepoStatus{State: github.String(s.state), Context: github.String(s.context)})
			if err != nil || st.GetCreator().GetLogin() != ghemu.DefaultMaintainer {
				t.Fatalf("status %+v: %v", st, err)
			}
		}
		cs, _, err := maint.Repositories.GetCombinedStatus(ctx, org, repo, "statuses", nil)
		if err != nil {
			t.Fatal(err)
		}
		if cs.GetState() != "success" || cs.GetTotalCount() != 2 || cs.GetSHA() != head {
			t.Errorf("combined = %s", github.Stringify(cs))
		}
		if _, _, err := maint.Repositories.CreateStatus(ctx, org, repo, head, &github.RepoStatus{State: github.String("error"), Context: github.String("ci/a writer may post")}); err != nil {
			t.Fatal(err)
		}
		if cs, _, err = maint.Repositories.GetCombinedStatus(ctx, org, repo, head, nil); err != nil || cs.GetState() != "failure" {
			t.Errorf("after an error: %s, %v", github.Stringify(cs), err)
		}
	})
}
