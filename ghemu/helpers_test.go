package ghemu_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

const (
	org  = ghemu.DefaultOrg
	repo = ghemu.DefaultRepo
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// userClient is a go-github client acting as a seeded user with their personal token.
func userClient(t *testing.T, e *ghemu.Emulator, login string) *github.Client {
	t.Helper()
	tok := e.UserToken(login)
	if tok == "" {
		t.Fatalf("no token for user %q", login)
	}
	c := github.NewClient(nil).WithAuthToken(tok)
	c.BaseURL = mustURL(t, e.BaseURL()+"/")
	return c
}

// appTransport authenticates as the App with a JWT signed by its private key, as
// ghinstallation does against GitHub.
func appTransport(t *testing.T, e *ghemu.Emulator) *ghinstallation.AppsTransport {
	t.Helper()
	tr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, e.AppID(), e.AppKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = e.BaseURL()
	return tr
}

func appClient(t *testing.T, e *ghemu.Emulator) *github.Client {
	t.Helper()
	c := github.NewClient(&http.Client{Transport: appTransport(t, e)})
	c.BaseURL = mustURL(t, e.BaseURL()+"/")
	return c
}

// installationClient acts as the App's installation on org, through ghinstallation's
// token-minting transport.
func installationClient(t *testing.T, e *ghemu.Emulator) *github.Client {
	t.Helper()
	itr := ghinstallation.NewFromAppsTransport(appTransport(t, e), e.InstallationID(org))
	itr.BaseURL = e.BaseURL()
	c := github.NewClient(&http.Client{Transport: itr})
	c.BaseURL = mustURL(t, e.BaseURL()+"/")
	return c
}

// tokenClient acts with a raw token (an installation token minted by the test).
func tokenClient(t *testing.T, e *ghemu.Emulator, token string) *github.Client {
	t.Helper()
	c := github.NewClient(nil).WithAuthToken(token)
	c.BaseURL = mustURL(t, e.BaseURL()+"/")
	return c
}

func newEmulator(t *testing.T, opts ghemu.Options) *ghemu.Emulator {
	t.Helper()
	return emutest.New(t, opts)
}

func wantStatus(t *testing.T, resp *github.Response, err error, want int) {
	t.Helper()
	got := 0
	if resp != nil {
		got = resp.StatusCode
	}
	if got != want {
		t.Fatalf("status = %d, want %d (err: %v)", got, want, err)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func asErrorResponse(err error, target **github.ErrorResponse) bool {
	return errors.As(err, target)
}
