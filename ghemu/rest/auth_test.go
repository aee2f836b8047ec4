package rest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// twoRepoSeed installs the App on an org with two repositories, so token scoping can
// be checked.
func twoRepoSeed() *ghemu.Seed {
	s := ghemu.DefaultSeed()
	other := s.Repositories[0]
	other.Name = "gadgets"
	other.Protected = nil
	s.Repositories = append(s.Repositories, other)
	return s
}

func TestAppAuthAndInstallationTokens(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{Seed: twoRepoSeed()})
	ctx := emutest.Context(t)
	app := emutest.AppClient(t, e)

	got, _, err := app.Apps.Get(ctx, "")
	if err != nil {
		t.Fatalf("GET /app: %v", err)
	}
	if got.GetID() != e.AppID() || got.GetSlug() != ghemu.DefaultAppSlug {
		t.Errorf("app = %d/%s, want %d/%s", got.GetID(), got.GetSlug(), e.AppID(), ghemu.DefaultAppSlug)
	}
	insts, _, err := app.Apps.ListInstallations(ctx, nil)
	if err != nil || len(insts) != 1 || insts[0].GetAccount().GetLogin() != org {
		t.Fatalf("installations = %v, %v; want one on %s", insts, err, org)
	}
	inst, _, err := app.Apps.FindRepositoryInstallation(ctx, org, repo)
	if err != nil || inst.GetID() != e.InstallationID(org) {
		t.Fatalf("repository installation = %v, %v", inst, err)
	}

	t.Run("token scoped to one repository gets 404 on the other", func(t *testing.T) {
		tok, _, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
			Repositories: []string{repo},
			Permissions:  &github.InstallationPermissions{Issues: github.String("write"), Contents: github.String("read")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(tok.GetExpiresAt().Time); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("token expires in %v, want one hour", d)
		}
		c := emutest.TokenClient(t, e, tok.GetToken())
		if _, _, err := c.Repositories.Get(ctx, org, repo); err != nil {
			t.Errorf("scoped repo: %v", err)
		}
		_, resp, err := c.Repositories.Get(ctx, org, "gadgets")
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
		list, _, err := c.Apps.ListRepos(ctx, nil)
		if err != nil || list.GetTotalCount() != 1 {
			t.Errorf("installation repositories = %v, %v; want 1", list, err)
		}
	})

	t.Run("token without issues write gets 403 on a comment", func(t *testing.T) {
		tok, _, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
			Permissions: &github.InstallationPermissions{Issues: github.String("read")},
		})
		if err != nil {
			t.Fatal(err)
		}
		maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
		is, _, err := maint.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("x")})
		if err != nil {
			t.Fatal(err)
		}
		c := emutest.TokenClient(t, e, tok.GetToken())
		_, resp, err := c.Issues.CreateComment(ctx, org, repo, is.GetNumber(), &github.IssueComment{Body: github.String("hi")})
		emutest.WantStatus(t, resp, err, http.StatusForbidden)
		if _, _, err := c.Issues.Get(ctx, org, repo, is.GetNumber()); err != nil {
			t.Errorf("issues read should still work: %v", err)
		}
	})

	t.Run("asking for more than the installation has is refused", func(t *testing.T) {
		_, resp, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
			Permissions: &github.InstallationPermissions{Secrets: github.String("write")},
		})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
		_, resp, err = app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
			Repositories: []string{"nope"},
		})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
	})

	t.Run("revoked token is refused", func(t *testing.T) {
		tok, _, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := emutest.TokenClient(t, e, tok.GetToken())
		if resp, err := c.Apps.RevokeInstallationToken(ctx); err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("revoke: %v", err)
		}
		_, resp, err := c.Repositories.Get(ctx, org, repo)
		emutest.WantStatus(t, resp, err, http.StatusUnauthorized)
	})

	t.Run("ghinstallation transport mints and uses tokens", func(t *testing.T) {
		c := emutest.InstallationClient(t, e)
		is, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("from the app")})
		if err != nil {
			t.Fatal(err)
		}
		if is.GetUser().GetLogin() != ghemu.DefaultAppSlug+"[bot]" {
			t.Errorf("issue author = %q, want the App's bot", is.GetUser().GetLogin())
		}
	})

	t.Run("App JWT is refused on repository routes and installation tokens on app routes", func(t *testing.T) {
		_, resp, err := app.Repositories.Get(ctx, org, repo)
		emutest.WantStatus(t, resp, err, http.StatusUnauthorized)
		c := emutest.InstallationClient(t, e)
		_, resp, err = c.Apps.Get(ctx, "")
		emutest.WantStatus(t, resp, err, http.StatusUnauthorized)
	})
}

func TestExpiredTokenIsRefused(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	e := emutest.New(t, ghemu.Options{Now: func() time.Time { return clock() }})
	ctx := emutest.Context(t)
	tok, _, err := emutest.AppClient(t, e).Apps.CreateInstallationToken(ctx, e.InstallationID(org), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := emutest.TokenClient(t, e, tok.GetToken())
	if _, _, err := c.Repositories.Get(ctx, org, repo); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	now = now.Add(61 * time.Minute)
	_, resp, err := c.Repositories.Get(ctx, org, repo)
	emutest.WantStatus(t, resp, err, http.StatusUnauthorized)
}

func TestUserPermissions(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	reader := emutest.UserClient(t, e, ghemu.DefaultReader)
	tests := []struct {
		user, want string
	}{
		{ghemu.DefaultMaintainer, "write"},
		{ghemu.DefaultReader, "read"},
		{org, "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			p, _, err := maint.Repositories.GetPermissionLevel(ctx, org, repo, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			if p.GetPermission() != tt.want {
				t.Errorf("permission = %q, want %q", p.GetPermission(), tt.want)
			}
		})
	}
	_, resp, err := maint.Repositories.GetPermissionLevel(ctx, org, repo, "nobody")
	emutest.WantStatus(t, resp, err, http.StatusNotFound)

	is, _, err := maint.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	// A reader may comment but not label.
	if _, _, err := reader.Issues.CreateComment(ctx, org, repo, is.GetNumber(), &github.IssueComment{Body: github.String("/approve")}); err != nil {
		t.Errorf("reader comment: %v", err)
	}
	_, resp, err = reader.Issues.AddLabelsToIssue(ctx, org, repo, is.GetNumber(), []string{"agent:implement"})
	emutest.WantStatus(t, resp, err, http.StatusForbidden)
	// Without credentials a private repository does not exist.
	anon := emutest.AnonymousClient(t, e)
	_, resp, err = anon.Repositories.Get(ctx, org, repo)
	emutest.WantStatus(t, resp, err, http.StatusUnauthorized)
	bad := emutest.TokenClient(t, e, "ghp_not_a_real_token")
	_, resp, err = bad.Repositories.Get(ctx, org, repo)
	emutest.WantStatus(t, resp, err, http.StatusUnauthorized)
}
