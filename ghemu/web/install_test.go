package web_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// installSeed is the default world with three more repositories of acme, the admin
// olivia on three of them, and the App installed nowhere yet.
func installSeed() *ghemu.Seed {
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: "olivia", Name: "Olivia Admin"})
	base := seed.Repositories[0]
	for _, name := range []string{"gadgets", "gizmos", "sprockets"} {
		r := base
		r.Name, r.Files, r.Protected = name, map[string]string{"README.md": "# " + name + "\n"}, nil
		seed.Repositories = append(seed.Repositories, r)
	}
	for i := range seed.Repositories[:3] {
		seed.Repositories[i].Collaborators = maps.Clone(seed.Repositories[i].Collaborators)
		seed.Repositories[i].Collaborators["olivia"] = "admin"
	}
	seed.Installations = nil
	return seed
}

var targetRE = regexp.MustCompile(`href="(/apps/bumper/installations/new/permissions\?[^"]+)"`)

// TestInstallPages: the App's pages and its installation, as an admin goes through
// them in a browser: the App's public and settings pages link to "Install App"; the
// install page offers the owner's account only (the App is private); its repository
// page asks a signed-in user; a writer may not install, an admin of the repositories
// may, on the ones chosen; the installation webhook names them, the browser lands on
// the installation's page, and a second install is refused.
func TestInstallPages(t *testing.T) {
	rc, hooks := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{Seed: installSeed(), WebhookURL: hooks, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	anon := newBrowser(t, e)

	status, page := anon.get("/apps/bumper")
	if status != http.StatusOK || !strings.Contains(page, `href="/apps/bumper/installations/new"`) || !strings.Contains(page, "Not installed anywhere yet") {
		t.Fatalf("the App's page: %d\n%s", status, page)
	}
	status, page = anon.get("/organizations/acme/settings/apps/bumper")
	if status != http.StatusOK || !strings.Contains(page, `id="install-app" href="/apps/bumper/installations/new"`) || !strings.Contains(page, "4242") {
		t.Fatalf("the App's settings page: %d\n%s", status, page)
	}
	if status, _ := anon.get("/settings/apps/bumper"); status != http.StatusNotFound {
		t.Errorf("an organisation's App's settings under a person's path: %d", status)
	}
	if status, _ := anon.get("/apps/other/installations/new"); status != http.StatusNotFound {
		t.Errorf("another App's install page: %d", status)
	}
	status, page = anon.get("/apps/bumper/installations/new?state=s1")
	m := targetRE.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil || strings.Contains(page, ">maintainer<") {
		t.Fatalf("the install page offers acme alone: %d\n%s", status, page)
	}
	perms := strings.ReplaceAll(m[1], "&amp;", "&")
	if !strings.Contains(perms, "state=s1") {
		t.Errorf("the state does not travel: %s", perms)
	}
	status, page = anon.get(perms)
	if status != http.StatusOK || !strings.Contains(page, `id="sign-in-first"`) || strings.Contains(page, `id="install"`) {
		t.Fatalf("the repository page without signing in: %d\n%s", status, page)
	}

	installed := func() int64 { return e.InstallationID(org) }
	choose := func(b *browser, repos ...string) url.Values {
		return url.Values{"csrf": {b.csrf}, "repository_selection": {"selected"}, "repository_ids": repos}
	}
	writer := newBrowser(t, e)
	writer.signIn(ghemu.DefaultMaintainer, e.UserToken(ghemu.DefaultMaintainer))
	writer.get(perms)
	if status, _, body := writer.post(perms, choose(writer, "widgets"), nil); status != http.StatusForbidden || !strings.Contains(body, "needs admin access") || installed() != 0 {
		t.Fatalf("a writer installs: %d\n%s", status, body)
	}

	admin := newBrowser(t, e)
	admin.signIn("olivia", e.UserToken("olivia"))
	status, page = admin.get(perms)
	if status != http.StatusOK || !strings.Contains(page, `id="install"`) || !strings.Contains(page, `value="sprockets"`) {
		t.Fatalf("the repository page, signed in: %d\n%s", status, page)
	}
	// Refused without a choice, with a repository olivia does not administer, and from another site.
	for _, c := range []struct {
		name string
		form url.Values
		edit func(*http.Request)
		want int
	}{
		{"no repository", choose(admin), nil, http.StatusUnprocessableEntity},
		{"a repository olivia does not administer", choose(admin, "widgets", "sprockets"), nil, http.StatusForbidden},
		{"all of acme's, sprockets included", url.Values{"csrf": {admin.csrf}, "repository_selection": {"all"}}, nil, http.StatusForbidden},
		{"from another site", choose(admin, "widgets"), func(r *http.Request) {
			r.Header.Set("Origin", "http://evil.example")
			r.Header.Set("Sec-Fetch-Site", "cross-site")
		}, http.StatusForbidden},
	} {
		if status, _, body := admin.post(perms, c.form, c.edit); status != c.want || installed() != 0 {
			t.Errorf("%s: %d, want %d; installed %d\n%s", c.name, status, c.want, installed(), body)
		}
	}
	status, h, body := admin.post(perms, choose(admin, "widgets", "gadgets", "gizmos"), nil)
	id := installed()
	want := "/organizations/acme/settings/installations/"
	if status != http.StatusSeeOther || id == 0 || !strings.HasPrefix(h.Get("Location"), want) {
		t.Fatalf("olivia installs: %d to %q (installation %d)\n%s", status, h.Get("Location"), id, body)
	}
	status, page = admin.get(h.Get("Location"))
	for _, r := range []string{"acme/widgets", "acme/gadgets", "acme/gizmos"} {
		if !strings.Contains(page, `href="/`+r+`"`) {
			t.Errorf("the installation's page lacks %s", r)
		}
	}
	if status != http.StatusOK || strings.Contains(page, "sprockets") {
		t.Errorf("the installation's page: %d\n%s", status, page)
	}
	if _, page := anon.get("/apps/bumper"); !strings.Contains(page, "acme/widgets, acme/gadgets, acme/gizmos") {
		t.Errorf("the App's page does not list the installation:\n%s", page)
	}
	if status, _, body := admin.post(perms, choose(admin, "widgets"), nil); status != http.StatusUnprocessableEntity || !strings.Contains(body, "already installed") {
		t.Errorf("a second install: %d\n%s", status, body)
	}

	// The App's token sees the three repositories and not the fourth; the webhook named them.
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range rc.Got() {
		if ev.Event != "installation" {
			continue
		}
		var p struct {
			Action       string `json:"action"`
			Installation struct {
				ID                  int64  `json:"id"`
				RepositorySelection string `json:"repository_selection"`
			} `json:"installation"`
			Repositories []struct {
				FullName string `json:"full_name"`
			} `json:"repositories"`
			Sender struct {
				Login string `json:"login"`
			} `json:"sender"`
		}
		if err := json.Unmarshal(ev.Body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Action != "created" || p.Installation.ID != id || p.Installation.RepositorySelection != "selected" {
			t.Errorf("installation webhook: %+v", p)
		}
		for _, r := range p.Repositories {
			got = append(got, r.FullName)
		}
	}
	if strings.Join(got, " ") != "acme/widgets acme/gadgets acme/gizmos" {
		t.Errorf("the installation webhooks named %v", got)
	}
	bot := emutest.InstallationClient(t, e)
	repos, _, err := bot.Apps.ListRepos(ctx, nil)
	if err != nil || repos.GetTotalCount() != 3 {
		t.Errorf("the installation's repositories: %+v %v", repos, err)
	}
}

// TestInstallGoesToTheSetupURL: an App whose manifest has a setup_url sends the
// browser there once installed, with installation_id, setup_action=install and the
// state the install page was given, as GitHub does.
func TestInstallGoesToTheSetupURL(t *testing.T) {
	e := emutest.New(t, ghemu.Options{Seed: installSeed()})
	b := newBrowser(t, e)
	man, _ := json.Marshal(map[string]any{"name": "Setup Test", "url": "https://app.example.test",
		"hook_attributes": map[string]any{"url": "https://app.example.test/hook"},
		"redirect_url":    "https://app.example.test/back", "setup_url": "https://app.example.test/setup?from=github",
		"default_permissions": map[string]string{"contents": "read"}})
	status, _, page := b.post("/organizations/acme/settings/apps/new?state=x", url.Values{"manifest": {string(man)}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "https://app.example.test/setup?from=github") {
		t.Fatalf("the manifest page does not show the setup URL: %d\n%s", status, page)
	}
	status, _, _ = b.post("/organizations/acme/settings/apps/new/confirm", url.Values{"manifest": {string(man)}, "state": {"x"}}, nil)
	if status != http.StatusFound {
		t.Fatalf("creating the App: %d", status)
	}
	b.signIn("olivia", e.UserToken("olivia"))
	_, page = b.get("/apps/setup-test/installations/new?state=abc")
	m := regexp.MustCompile(`href="(/apps/setup-test/installations/new/permissions\?[^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no account to install on:\n%s", page)
	}
	perms := strings.ReplaceAll(m[1], "&amp;", "&")
	_, page = b.get(perms)
	if !strings.Contains(page, "https://app.example.test/setup") {
		t.Errorf("the install page does not say where the browser goes next")
	}
	status, h, body := b.post(perms, url.Values{"csrf": {b.csrf}, "repository_selection": {"selected"}, "repository_ids": {"widgets"}, "state": {"abc"}}, nil)
	loc, _ := url.Parse(h.Get("Location"))
	if status != http.StatusSeeOther || loc == nil || loc.Host != "app.example.test" || loc.Path != "/setup" {
		t.Fatalf("after installing: %d to %q\n%s", status, h.Get("Location"), body)
	}
	q := loc.Query()
	if q.Get("from") != "github" || q.Get("setup_action") != "install" || q.Get("state") != "abc" || q.Get("installation_id") != strconv.FormatInt(e.InstallationID(org), 10) {
		t.Errorf("the setup URL's query: %v (installation %d)", q, e.InstallationID(org))
	}
}
