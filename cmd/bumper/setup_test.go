package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/doctorreport"
)

// pageBrowser is an HTTP client that does what a browser does with the pages of this
// path: it keeps cookies, follows redirects (to setup's local page too), and sends a
// form's fields, with the page's origin, to the form's action.
type pageBrowser struct {
	t *testing.T
	c *http.Client
}

var (
	formActionRE = regexp.MustCompile(`<form action="([^"]+)" method="post">`)
	formFieldRE  = regexp.MustCompile(`<input type="(?:hidden|text)" name="([a-z_]+)" value="([^"]*)"`)
)

func (b *pageBrowser) do(method, u string, form url.Values, origin string) (int, string, *url.URL) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Request.URL
}

// submit posts the first form of page (from pageURL) with its own fields and extra.
func (b *pageBrowser) submit(pageURL *url.URL, page string, extra url.Values) (int, string, *url.URL) {
	b.t.Helper()
	m := formActionRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form on %s:\n%s", pageURL, page)
	}
	action, err := pageURL.Parse(html.UnescapeString(m[1]))
	if err != nil {
		b.t.Fatal(err)
	}
	vals := url.Values{}
	for _, f := range formFieldRE.FindAllStringSubmatch(page, -1) {
		vals.Set(f[1], html.UnescapeString(f[2]))
	}
	if csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page); csrf != nil {
		vals.Set("csrf", csrf[1])
	}
	maps.Copy(vals, extra)
	return b.do(http.MethodPost, action.String(), vals, pageURL.Scheme+"://"+pageURL.Host)
}

// TestAdminSetsUpAgainstTheEmulator is an admin's first hour, on a real emulator:
// `bumper setup --github-url` alone (the API and the OIDC issuer found by asking the
// emulator), its manifest flow driven through setup's local page and the emulator's
// pages as a browser drives them; the new App installed through the emulator's
// install page on three of acme's four repositories, by an admin of them; then
// `bumper doctor --host=false` with the serve.yml setup wrote passes for each of the
// three, and blocks for the fourth, where the App is not installed.
func TestAdminSetsUpAgainstTheEmulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: "olivia", Name: "Olivia Admin"})
	base := seed.Repositories[0]
	base.Files = maps.Clone(base.Files)
	base.Files[".github/bumper.yml"] = "version: 1\nharness: {name: claude-code, version: " + harness.DefaultClaudeCodeVersion + "}\n"
	seed.Repositories = nil
	repos := []string{"widgets", "gadgets", "gizmos", "sprockets"}
	for _, name := range repos {
		r := base
		r.Name = name
		r.Collaborators = maps.Clone(base.Collaborators)
		r.Collaborators["olivia"] = "admin"
		seed.Repositories = append(seed.Repositories, r)
	}
	seed.Installations = nil
	e := emutest.New(t, ghemu.Options{Seed: seed})
	dir := filepath.Join(t.TempDir(), "bumper-app")

	// bumper setup, as the admin types it.
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"setup", "--url", "https://bumper.example.test", "--org", "acme", "--github-url", e.BaseURL(), "--dir", dir}, &out, &errb)
	}()
	pageRE := regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+/) in a browser`)
	var local string
	for local == "" {
		if m := pageRE.FindStringSubmatch(out.String()); m != nil {
			local = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("setup exited %d before serving its page\n%s%s", code, out.String(), errb.String())
		case <-ctx.Done():
			t.Fatal("setup did not serve its page")
		case <-time.After(20 * time.Millisecond):
		}
	}
	jar, _ := cookiejar.New(nil)
	b := &pageBrowser{t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	status, page, at := b.do(http.MethodGet, local, nil, "")
	if status != http.StatusOK {
		t.Fatalf("setup's page: %d\n%s", status, page)
	}
	// The button: GitHub's page shows the App; its button creates it and sends the browser back.
	status, page, at = b.submit(at, page, nil)
	if status != http.StatusOK || !strings.Contains(page, "Create GitHub App for acme") {
		t.Fatalf("the emulator's manifest page: %d\n%s", status, page)
	}
	status, page, at = b.submit(at, page, nil)
	if status != http.StatusOK || !strings.HasPrefix(at.String(), local+"callback?") || !strings.Contains(page, "installations/new") {
		t.Fatalf("back at %s: %d\n%s", at, status, page)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("setup exited %d\n%s%s", code, out.String(), errb.String())
		}
	case <-ctx.Done():
		t.Fatal("setup did not finish")
	}
	cfgPath := filepath.Join(dir, "serve.yml")
	cfg, err := app.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.V3APIURL != e.BaseURL()+"/api/v3/" || cfg.Bumper.OIDCIssuer != e.OIDCIssuerURL() || cfg.GitHub.App.IntegrationID != e.AppID() {
		t.Errorf("serve.yml: API %s, issuer %s, App %d (the emulator's: %d)", cfg.GitHub.V3APIURL, cfg.Bumper.OIDCIssuer, cfg.GitHub.App.IntegrationID, e.AppID())
	}
	var ident struct {
		Slug    string `json:"slug"`
		HTMLURL string `json:"html_url"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "app.json"))
	if err := json.Unmarshal(raw, &ident); err != nil {
		t.Fatal(err)
	}
	installURL := strings.TrimRight(ident.HTMLURL, "/") + "/installations/new"
	if !strings.Contains(out.String(), installURL) {
		t.Errorf("setup does not print the install page %s:\n%s", installURL, out.String())
	}

	// Before installing, doctor says where to install it.
	doctor := func(repo string) (int, doctorreport.Report, string) {
		var o, eb bytes.Buffer
		code := run(ctx, []string{"doctor", "--host=false", "--config", cfgPath, "--json", "--repo", "acme/" + repo}, &o, &eb)
		var rep doctorreport.Report
		if err := json.Unmarshal(o.Bytes(), &rep); err != nil {
			t.Fatalf("doctor's report: %v\n%s%s", err, o.String(), eb.String())
		}
		return code, rep, o.String()
	}
	if code, _, report := doctor("widgets"); code != 1 || !strings.Contains(report, installURL) {
		t.Errorf("doctor before the App is installed: exit %d\n%s", code, report)
	}

	// The admin signs in on the emulator and installs the App on three repositories.
	status, page, at = b.do(http.MethodGet, e.BaseURL()+"/login?return="+url.QueryEscape("/apps/"+ident.Slug+"/installations/new"), nil, "")
	if status != http.StatusOK {
		t.Fatalf("sign-in page: %d", status)
	}
	status, page, at = b.submit(at, strings.Replace(page, `<form class="box-body form" method="post" action="/session">`, `<form action="/session" method="post">`, 1),
		url.Values{"login": {"olivia"}, "token": {e.UserToken("olivia")}})
	link := regexp.MustCompile(`href="(/apps/[^"]+/installations/new/permissions\?[^"]+)"`).FindStringSubmatch(page)
	if status != http.StatusOK || at.Path != "/apps/"+ident.Slug+"/installations/new" || link == nil {
		t.Fatalf("the install page at %s: %d\n%s", at, status, page)
	}
	status, page, at = b.do(http.MethodGet, e.BaseURL()+html.UnescapeString(link[1]), nil, "")
	if status != http.StatusOK || !strings.Contains(page, `id="install"`) {
		t.Fatalf("the repositories page: %d\n%s", status, page)
	}
	status, page, at = b.submit(at, page, url.Values{"repository_selection": {"selected"}, "repository_ids": repos[:3]})
	if status != http.StatusOK || !strings.Contains(at.Path, "/settings/installations/") {
		t.Fatalf("after installing, at %s: %d\n%s", at, status, page)
	}

	for _, repo := range repos[:3] {
		code, rep, report := doctor(repo)
		t.Logf("doctor for acme/%s: exit %d, %d warnings", repo, code, rep.Warnings)
		if code != 0 || rep.Blocking != 0 {
			t.Errorf("doctor for acme/%s: exit %d\n%s", repo, code, report)
		}
	}
	code, rep, report := doctor(repos[3])
	if code != 1 || !strings.Contains(report, "repo.installation") {
		t.Errorf("doctor for acme/%s, not installed: exit %d, %d blocking\n%s", repos[3], code, rep.Blocking, report)
	}
}
