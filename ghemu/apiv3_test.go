package ghemu_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// TestEnterpriseServerPrefix: the REST API is also served under /api/v3/, as GitHub
// Enterprise Server serves it, so a client set up for an Enterprise Server works
// unchanged: GET /meta answers there (what setup probes), go-github's enterprise URLs
// and go-githubapp's App and installation clients work, pagination follows the Link
// header, and what is not a REST route below the prefix is the REST API's 404, not a
// web page. Every exchange is checked against GitHub's description (emutest).
func TestEnterpriseServerPrefix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := emutest.New(t, ghemu.Options{})
	base := e.BaseURL()

	for _, p := range []string{"/meta", "/api/v3/meta"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		err = json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || meta["verifiable_password_authentication"] != false {
			t.Errorf("GET %s: %d %v %v", p, resp.StatusCode, meta, err)
		}
	}

	gh, err := github.NewClient(nil).WithAuthToken(e.UserToken("maintainer")).WithEnterpriseURLs(base, base)
	if err != nil {
		t.Fatal(err)
	}
	if gh.BaseURL.String() != base+"/api/v3/" {
		t.Fatalf("go-github's enterprise base URL is %s", gh.BaseURL)
	}
	rp, _, err := gh.Repositories.Get(ctx, org, repo)
	if err != nil || rp.GetFullName() != org+"/"+repo {
		t.Fatalf("GET /api/v3/repos/%s/%s: %v %v", org, repo, rp, err)
	}
	for i := range 3 {
		if _, _, err := gh.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("issue " + string(rune('a'+i)))}); err != nil {
			t.Fatal(err)
		}
	}
	opt := &github.IssueListByRepoOptions{ListOptions: github.ListOptions{PerPage: 1}}
	seen := 0
	for {
		issues, resp, err := gh.Issues.ListByRepo(ctx, org, repo, opt)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(issues)
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if seen != 3 {
		t.Errorf("paged through %d issues, want 3", seen)
	}

	// serve's clients with an Enterprise Server's API URL.
	cc, err := githubapp.NewDefaultCachingClientCreator(githubapp.Config{V3APIURL: base + "/api/v3/",
		App: struct {
			IntegrationID int64  `yaml:"integration_id" json:"integrationId"`
			WebhookSecret string `yaml:"webhook_secret" json:"webhookSecret"`
			PrivateKey    string `yaml:"private_key" json:"privateKey"`
		}{IntegrationID: e.AppID(), WebhookSecret: "s", PrivateKey: string(e.AppKeyPEM())}})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := cc.NewInstallationClient(e.InstallationID(org))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := inst.Repositories.Get(ctx, org, repo); err != nil {
		t.Errorf("an installation token minted under /api/v3/: %v", err)
	}

	// Below the prefix, only the REST API answers.
	resp, err := http.Get(base + "/api/v3/" + org)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("GET /api/v3/%s: %d %s\n%s", org, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}
