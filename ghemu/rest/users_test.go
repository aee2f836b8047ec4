package rest_test

import (
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// TestUserProfiles: GET /users/{username} renders a person, an organization and an
// App's bot user (whose ID is another App's ID in the emulator, and what GitHub's
// noreply commit address for the App carries), with or without a credential; an
// unknown login is 404.
func TestUserProfiles(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{Seed: pinningSeed()})
	ctx := emutest.Context(t)
	anon := emutest.AnonymousClient(t, e)
	tests := []struct {
		login, typ, name string
		client           *github.Client
	}{
		{ghemu.DefaultMaintainer, "User", "Mae Maintainer", anon},
		{ghemu.DefaultOrg, "Organization", "", emutest.InstallationClient(t, e)},
		{ghemu.DefaultAppSlug + "[bot]", "Bot", "", emutest.InstallationClient(t, e)},
		{otherApp + "[bot]", "Bot", "", emutest.UserClient(t, e, ghemu.DefaultReader)},
	}
	for _, tt := range tests {
		t.Run(tt.login, func(t *testing.T) {
			u, _, err := tt.client.Users.Get(ctx, tt.login)
			if err != nil {
				t.Fatal(err)
			}
			if u.GetLogin() != tt.login || u.GetType() != tt.typ || u.GetName() != tt.name || u.GetID() == 0 {
				t.Errorf("profile = %s", github.Stringify(u))
			}
			if tt.login == otherApp+"[bot]" && u.GetID() != otherAppID(t, e) {
				t.Errorf("bot user ID %d, want the App's %d", u.GetID(), otherAppID(t, e))
			}
		})
	}
	_, resp, err := anon.Users.Get(ctx, "nobody-here")
	emutest.WantStatus(t, resp, err, http.StatusNotFound)
}
