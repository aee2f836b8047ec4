package setup_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/handler"
	"github.com/bumperdev/bumper/app/setup"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/attest"
)

// formRE finds a form's action and its hidden fields in the pages (html/template
// writes attributes in double quotes).
var (
	actionRE = regexp.MustCompile(`<form action="([^"]+)" method="post">`)
	hiddenRE = regexp.MustCompile(`<input type="(?:hidden|text)" name="([a-z]+)" value="([^"]*)"`)
)

// form reads the one form of a page: where it posts and its fields, as a browser
// would send them.
func form(t *testing.T, page string) (string, url.Values) {
	t.Helper()
	m := actionRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form in the page:\n%s", page)
	}
	vals := url.Values{}
	for _, f := range hiddenRE.FindAllStringSubmatch(page, -1) {
		vals.Set(f[1], html.UnescapeString(f[2]))
	}
	return html.UnescapeString(m[1]), vals
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, vals url.Values) (int, string, string) {
	t.Helper()
	resp, err := c.PostForm(u, vals)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Request.URL.String()
}

type started struct {
	dir  string
	page string
	res  chan *setup.Result
	err  chan error
}

// start runs setup against the emulator and waits until its page is served.
func start(t *testing.T, ctx context.Context, e *ghemu.Emulator, dir string) started {
	t.Helper()
	ready := make(chan string, 1)
	s := started{dir: dir, res: make(chan *setup.Result, 1), err: make(chan error, 1)}
	go func() {
		// No API URL: setup finds it, as for an admin who gives --github-url alone.
		res, err := setup.Run(ctx, setup.Options{GitHubURL: e.BaseURL(), Org: ghemu.DefaultOrg,
			PublicURL: "https://bumper.example.test", Name: "Bumper for acme", Dir: dir,
			Ready: func(u string) { ready <- u }})
		s.res <- res
		s.err <- err
	}()
	select {
	case s.page = <-ready:
	case err := <-s.err:
		t.Fatalf("setup did not start: %v", err)
	case <-ctx.Done():
		t.Fatal("setup did not start in time")
	}
	return s
}

// TestManifestFlow is the whole flow as an admin goes through it, against the emulator:
// the local page, GitHub's page showing the App, its creation, the redirect back with
// the code and state, the exchange, the files; then the App is real: its key
// authenticates as the App, it is installed, its installation token reads a repository.
// The browser's part is done with HTTP requests, each the same request a browser sends
// for the same form.
func TestManifestFlow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := emutest.New(t, ghemu.Options{})
	dir := filepath.Join(t.TempDir(), "bumper-app")
	s := start(t, ctx, e, dir)
	browser := &http.Client{Timeout: 30 * time.Second}

	code, page := get(t, browser, s.page)
	if code != http.StatusOK {
		t.Fatalf("local page: %d\n%s", code, page)
	}
	for _, p := range setup.Permissions() {
		if !strings.Contains(page, html.EscapeString(p.Why)) {
			t.Errorf("the local page does not give the reason for %s", p.Name)
		}
	}
	action, fields := form(t, page)
	wantAction := e.BaseURL() + "/organizations/acme/settings/apps/new?state="
	if !strings.HasPrefix(action, wantAction) {
		t.Fatalf("the form posts to %s, want %s…", action, wantAction)
	}
	state := strings.TrimPrefix(action, wantAction)

	// GitHub's page shows the App; the admin presses "Create GitHub App".
	code, shown, _ := post(t, browser, action, fields)
	if code != http.StatusOK || !strings.Contains(shown, "Create GitHub App for acme") || !strings.Contains(shown, "https://bumper.example.test/api/github/hook") {
		t.Fatalf("GitHub's page: %d\n%s", code, shown)
	}
	confirm, fields := form(t, shown)
	if fields.Get("state") != state {
		t.Fatalf("the state did not travel: %q, want %q", fields.Get("state"), state)
	}
	// A forged return (the right code route, another state) is refused and changes
	// nothing: the flow still completes afterwards.
	if code, body := get(t, browser, s.page+"callback?code=forged&state=not-"+state); code != http.StatusBadRequest {
		t.Fatalf("a callback with the wrong state: %d, want 400\n%s", code, body)
	}
	code, done, landed := post(t, browser, e.BaseURL()+confirm, fields)
	if code != http.StatusOK || !strings.Contains(done, `id="done"`) || !strings.HasPrefix(landed, s.page+"callback?") {
		t.Fatalf("back from GitHub at %s: %d\n%s", landed, code, done)
	}
	var res *setup.Result
	select {
	case res = <-s.res:
		if err := <-s.err; err != nil {
			t.Fatalf("setup: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("setup did not finish")
	}
	if res.App.ID != e.AppID() || res.App.Slug != "bumper-for-acme" || res.App.Owner != "acme" {
		t.Errorf("created %+v; the emulator's App is %d", res.App, e.AppID())
	}

	// The files: each in place with its mode, the secrets where they belong.
	modes := map[string]os.FileMode{setup.PrivateKeyFile: 0o600, setup.WebhookSecretFile: 0o600,
		setup.ServeConfigFile: 0o600, setup.IdentityFile: 0o644,
		setup.AttestationKeyFile: 0o600, setup.AttestationPublicKeyFile: 0o644}
	for name, mode := range modes {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	secret, _ := os.ReadFile(filepath.Join(dir, setup.WebhookSecretFile))
	if strings.TrimSpace(string(secret)) != e.WebhookSecret() {
		t.Errorf("webhook-secret holds %q, the App's is %q", secret, e.WebhookSecret())
	}
	if pem, _ := os.ReadFile(filepath.Join(dir, setup.PrivateKeyFile)); string(pem) != string(e.AppKeyPEM()) {
		t.Error("the private key written is not the App's")
	}
	ident, _ := os.ReadFile(filepath.Join(dir, setup.IdentityFile))
	if strings.Contains(string(ident), string(secret)) || strings.Contains(string(ident), "PRIVATE KEY") {
		t.Error("app.json holds a secret")
	}

	// serve takes the configuration as written, and the App is real.
	cfg, err := app.LoadConfig(filepath.Join(dir, setup.ServeConfigFile))
	if err != nil {
		t.Fatalf("serve refuses the configuration setup wrote: %v", err)
	}
	// The API setup found: the emulator's, under /api/v3/ as on GitHub Enterprise Server.
	if cfg.GitHub.App.IntegrationID != res.App.ID || cfg.GitHub.V3APIURL != e.BaseURL()+"/api/v3/" {
		t.Errorf("serve.yml: App %d at %s", cfg.GitHub.App.IntegrationID, cfg.GitHub.V3APIURL)
	}
	// The attestation key is named beside serve.yml, and its public half beside it.
	if cfg.Bumper.AttestationKeyFile != filepath.Join(dir, setup.AttestationKeyFile) {
		t.Errorf("serve.yml: attestation_key_file %q", cfg.Bumper.AttestationKeyFile)
	}
	attKey, _ := os.ReadFile(filepath.Join(dir, setup.AttestationKeyFile))
	attPub, _ := os.ReadFile(filepath.Join(dir, setup.AttestationPublicKeyFile))
	signer, err := attest.NewSigner(attKey)
	if err != nil {
		t.Fatalf("the attestation key setup wrote: %v", err)
	}
	if keys, err := attest.ParsePublicKeys(attPub); err != nil || len(keys) != 1 || keys[0].ID() != signer.PublicKey().ID() {
		t.Errorf("%s is not the attestation key's public half: %v", setup.AttestationPublicKeyFile, err)
	}
	if cfg.Bumper.OIDCIssuer != e.OIDCIssuerURL() {
		t.Errorf("serve.yml: oidc_issuer %s, the emulator's is %s", cfg.Bumper.OIDCIssuer, e.OIDCIssuerURL())
	}
	// The key is named relative to serve.yml, so the directory can be copied to the
	// server as it is (this test's working directory is not dir).
	if raw, _ := os.ReadFile(filepath.Join(dir, setup.ServeConfigFile)); !strings.Contains(string(raw), "private_key_file: \""+setup.PrivateKeyFile+"\"") {
		t.Errorf("serve.yml does not name the key beside it:\n%s", raw)
	}
	var summary strings.Builder
	res.WriteSummary(&summary)
	if !strings.Contains(summary.String(), "bumper doctor --host=false --config "+filepath.Join(dir, setup.ServeConfigFile)+" --repo OWNER/REPO") {
		t.Errorf("the summary's doctor command is not for the admin's machine:\n%s", summary.String())
	}
	cc, err := githubapp.NewDefaultCachingClientCreator(cfg.GitHub)
	if err != nil {
		t.Fatal(err)
	}
	appClient, err := cc.NewAppClient()
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := appClient.Apps.Get(ctx, "")
	if err != nil {
		t.Fatalf("GET /app with the new key: %v", err)
	}
	perms := asMap(t, got.GetPermissions())
	if g := setup.Compare(perms, got.Events); len(g.MissingPermissions)+len(g.ExtraPermissions)+len(g.MissingEvents)+len(g.ExtraEvents) > 0 {
		t.Errorf("the App has other permissions or events than Bumper needs: %+v", g)
	}
	if _, err := e.InstallApp(ghemu.DefaultOrg, []string{ghemu.DefaultRepo}); err != nil {
		t.Fatal(err)
	}
	inst, _, err := appClient.Apps.FindRepositoryInstallation(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		t.Fatalf("the new App's installation: %v", err)
	}
	gh, err := cc.NewInstallationClient(inst.GetID())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Repositories.Get(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo); err != nil {
		t.Fatalf("the installation token reads the repository: %v", err)
	}

	// The code worked once: a replay gets nothing.
	q, _ := url.Parse(landed)
	resp, err := http.Post(e.BaseURL()+"/app-manifests/"+q.Query().Get("code")+"/conversions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the code exchanged a second time: %d, want 404", resp.StatusCode)
	}

	// A second setup into the same directory refuses before it serves anything.
	_, err = setup.Run(ctx, setup.Options{GitHubURL: e.BaseURL(), PublicURL: "https://bumper.example.test", Dir: dir,
		Ready: func(string) { t.Error("a second setup served its page over an existing App's files") }})
	if err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("a second setup into %s: %v", dir, err)
	}
}

// TestCodeExpires: GitHub's code is good for an hour; the emulator's too.
func TestCodeExpires(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clock := newClock()
	e := emutest.New(t, ghemu.Options{Now: clock.now})
	s := start(t, ctx, e, filepath.Join(t.TempDir(), "app"))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, page := get(t, noFollow, s.page)
	action, fields := form(t, page)
	_, shown, _ := post(t, noFollow, action, fields)
	confirm, fields := form(t, shown)
	resp, err := noFollow.PostForm(e.BaseURL()+confirm, fields)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := resp.Location()
	if err != nil {
		t.Fatalf("no redirect: %d", resp.StatusCode)
	}
	clock.add(setup.CodeLifetime + time.Second)
	code, body := get(t, noFollow, back.String())
	if code != http.StatusBadGateway || !strings.Contains(body, "expires") {
		t.Errorf("an expired code: %d\n%s", code, body)
	}
	if err := <-s.err; err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("setup with an expired code: %v", err)
	}
	if entries, _ := os.ReadDir(s.dir); len(entries) > 0 {
		t.Errorf("a failed exchange left files: %v", entries)
	}
}

// fakeClock is the emulator's clock; its handlers read it from their goroutines.
type fakeClock struct{ ns atomic.Int64 }

func newClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// TestEventsAreTheHandlers keeps the manifest's events and the App's handlers in step:
// every event a handler takes is subscribed to (or always sent), and nothing more.
func TestEventsAreTheHandlers(t *testing.T) {
	var handled []string
	for _, h := range handlerEvents() {
		if !slices.Contains(setup.AlwaysSentEvents, h) {
			handled = append(handled, h)
		}
	}
	sort.Strings(handled)
	if got := setup.EventNames(); !slices.Equal(got, handled) {
		t.Errorf("the manifest subscribes to %v; the handlers take %v", got, handled)
	}
}

func handlerEvents() []string {
	var out []string
	for _, h := range handler.All(handler.Base{}) {
		out = append(out, h.Handles()...)
	}
	return out
}

// asMap is go-github's permissions struct as GitHub's {name: access} map.
func asMap(t *testing.T, p *github.InstallationPermissions) map[string]string {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOIDCIssuer(t *testing.T) {
	tests := []struct {
		name, githubURL, apiURL, want string
	}{
		{"github.com", "https://github.com", "https://api.github.com/", "https://token.actions.githubusercontent.com"},
		{"GitHub Enterprise Server", "https://ghe.example.com/", "https://ghe.example.com/api/v3/", "https://ghe.example.com/_services/token"},
		{"the emulator, with an API of its own", "http://127.0.0.1:18080", "http://127.0.0.1:18080/", "http://127.0.0.1:18080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := setup.OIDCIssuer(tt.githubURL, tt.apiURL); got != tt.want {
				t.Errorf("OIDCIssuer(%s, %s) = %s, want %s", tt.githubURL, tt.apiURL, got, tt.want)
			}
		})
	}
}

// TestDiscover: setup finds the REST API and the OIDC issuer as GitHub's tools do:
// github.com's without asking; an Enterprise Server's under /api/v3/ and at
// /_services/token; an API at the root of its address; the emulator's (which serves
// both API paths, and its issuer at its address); and a clear error when nothing
// answers.
func TestDiscover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meta := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"verifiable_password_authentication":false}`)
	}
	oidc := func(issuer *string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": *issuer})
		}
	}
	var ghesIssuer, rootIssuer string
	ghes := http.NewServeMux()
	ghes.HandleFunc("GET /api/v3/meta", meta)
	ghes.HandleFunc("GET /_services/token/.well-known/openid-configuration", oidc(&ghesIssuer))
	ghesSrv := httptest.NewServer(ghes)
	defer ghesSrv.Close()
	ghesIssuer = ghesSrv.URL + "/_services/token"
	root := http.NewServeMux()
	root.HandleFunc("GET /meta", meta)
	root.HandleFunc("GET /.well-known/openid-configuration", oidc(&rootIssuer))
	rootSrv := httptest.NewServer(root)
	defer rootSrv.Close()
	rootIssuer = rootSrv.URL
	// Something that is not GitHub: a web server answering every path with a page.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<html>hello</html>")
	}))
	defer other.Close()
	e := emutest.New(t, ghemu.Options{})

	// github.com is not asked: this client fails every request.
	offline := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("asked %s", r.URL)
		return nil, errors.New("offline")
	})}
	if api, err := setup.DiscoverAPIURL(ctx, offline, "https://github.com"); err != nil || api != "https://api.github.com/" {
		t.Errorf("github.com: %s %v", api, err)
	}
	if iss := setup.DiscoverOIDCIssuer(ctx, offline, "https://github.com", "https://api.github.com/"); iss != "https://token.actions.githubusercontent.com" {
		t.Errorf("github.com's issuer: %s", iss)
	}
	cases := []struct{ name, url, api, issuer string }{
		{"GitHub Enterprise Server", ghesSrv.URL, ghesSrv.URL + "/api/v3/", ghesIssuer},
		{"an API at the root", rootSrv.URL + "/", rootSrv.URL + "/", rootIssuer},
		{"the emulator", e.BaseURL(), e.BaseURL() + "/api/v3/", e.OIDCIssuerURL()},
	}
	for _, c := range cases {
		api, err := setup.DiscoverAPIURL(ctx, nil, c.url)
		if err != nil || api != c.api {
			t.Errorf("%s: API %s %v, want %s", c.name, api, err, c.api)
		}
		if iss := setup.DiscoverOIDCIssuer(ctx, nil, c.url, api); iss != c.issuer {
			t.Errorf("%s: issuer %s, want %s", c.name, iss, c.issuer)
		}
	}
	_, err := setup.DiscoverAPIURL(ctx, nil, other.URL)
	if err == nil || !strings.Contains(err.Error(), other.URL+"/api/v3/meta") || !strings.Contains(err.Error(), other.URL+"/meta: the answer is not JSON") ||
		!strings.Contains(err.Error(), "--api-url") {
		t.Errorf("no API: %v", err)
	}
	// setup stops there, before its page is served.
	_, err = setup.Run(ctx, setup.Options{GitHubURL: other.URL, PublicURL: "https://bumper.example.test", Dir: t.TempDir(),
		Ready: func(string) { t.Error("setup served its page without an API") }})
	if err == nil || !strings.Contains(err.Error(), "no GitHub REST API answers") {
		t.Errorf("setup without an API: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
