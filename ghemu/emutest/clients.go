package emutest

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
)

// Clients of an emulator as the real GitHub clients (go-github, ghinstallation) would
// be set up against GitHub, for the emulator's own tests.

// Context is a context for one test's calls, cancelled after a minute or when the test
// ends.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// UserClient is a go-github client acting as a seeded user with their personal token.
func UserClient(t testing.TB, e *ghemu.Emulator, login string) *github.Client {
	t.Helper()
	tok := e.UserToken(login)
	if tok == "" {
		t.Fatalf("no token for user %q", login)
	}
	return TokenClient(t, e, tok)
}

// TokenClient acts with a raw token (an installation token minted by the test).
func TokenClient(t testing.TB, e *ghemu.Emulator, token string) *github.Client {
	t.Helper()
	c := github.NewClient(nil).WithAuthToken(token)
	c.BaseURL = apiURL(t, e)
	return c
}

// AppTransport authenticates as the App with a JWT signed by its private key, as
// ghinstallation does against GitHub.
func AppTransport(t testing.TB, e *ghemu.Emulator) *ghinstallation.AppsTransport {
	t.Helper()
	tr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, e.AppID(), e.AppKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = e.BaseURL()
	return tr
}

// AppClient acts as the App itself (its JWT).
func AppClient(t testing.TB, e *ghemu.Emulator) *github.Client {
	t.Helper()
	c := github.NewClient(&http.Client{Transport: AppTransport(t, e)})
	c.BaseURL = apiURL(t, e)
	return c
}

// InstallationClient acts as the App's installation on the default organisation,
// through ghinstallation's token-minting transport.
func InstallationClient(t testing.TB, e *ghemu.Emulator) *github.Client {
	t.Helper()
	itr := ghinstallation.NewFromAppsTransport(AppTransport(t, e), e.InstallationID(ghemu.DefaultOrg))
	itr.BaseURL = e.BaseURL()
	c := github.NewClient(&http.Client{Transport: itr})
	c.BaseURL = apiURL(t, e)
	return c
}

// WantStatus fails the test unless resp has status want.
func WantStatus(t testing.TB, resp *github.Response, err error, want int) {
	t.Helper()
	got := 0
	if resp != nil {
		got = resp.StatusCode
	}
	if got != want {
		t.Fatalf("status = %d, want %d (err: %v)", got, want, err)
	}
}

func apiURL(t testing.TB, e *ghemu.Emulator) *url.URL {
	t.Helper()
	u, err := url.Parse(e.BaseURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// AnonymousClient calls without credentials.
func AnonymousClient(t testing.TB, e *ghemu.Emulator) *github.Client {
	t.Helper()
	c := github.NewClient(nil)
	c.BaseURL = apiURL(t, e)
	return c
}

// Dispatch starts a run of the default repository's workflow (a file name) on main with
// client, and returns the run's ID.
func Dispatch(t testing.TB, client *github.Client, workflow string, inputs map[string]any) int64 {
	t.Helper()
	body := map[string]any{"ref": "main", "inputs": inputs, "return_run_details": true}
	req, err := client.NewRequest("POST", "repos/"+ghemu.DefaultOrg+"/"+ghemu.DefaultRepo+"/actions/workflows/"+workflow+"/dispatches", body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		ID int64 `json:"workflow_run_id"`
	}
	if _, err := client.Do(Context(t), req, &out); err != nil || out.ID == 0 {
		t.Fatalf("dispatch %s: %v", workflow, err)
	}
	return out.ID
}
