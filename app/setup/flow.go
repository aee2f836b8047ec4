package setup

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"
)

// CodeLifetime is how long GitHub's manifest code can be exchanged.
const CodeLifetime = time.Hour

// Options configure the manifest flow.
type Options struct {
	// GitHubURL is GitHub's web address (default https://github.com): GitHub Enterprise
	// Server's, or `bumper emulator`'s.
	GitHubURL string
	// APIURL is the REST API's base URL; empty: api.github.com for github.com, else
	// found by asking GitHubURL (DiscoverAPIURL).
	APIURL string
	// OIDCIssuer is the issuer of the runners' OIDC tokens written to serve.yml; empty:
	// found by OpenID Connect discovery (DiscoverOIDCIssuer).
	OIDCIssuer string
	// Org registers the App under this organisation; empty: under the signed-in user.
	Org string
	// PublicURL is serve's public base URL: the webhook goes to PublicURL +
	// WebhookPath, and runners' BUMPER_URL is it.
	PublicURL   string
	WebhookPath string
	// Name is the App's name (the admin can change it on GitHub's page); GitHub wants
	// it unique across GitHub.
	Name string
	// Dir receives the credentials and serve.yml; it must not hold any of Files.
	Dir string
	// Listen is the loopback address of the local page (default 127.0.0.1:0).
	Listen string
	// HTTPClient makes the conversion call (default http.DefaultClient).
	HTTPClient *http.Client
	// Ready is called with the local page's address once it listens.
	Ready func(pageURL string)
}

func (o *Options) defaults() error {
	if o.GitHubURL == "" {
		o.GitHubURL = "https://github.com"
	}
	if o.APIURL == "" {
		v3, _, err := APIURLs(o.GitHubURL)
		if err != nil {
			return err
		}
		o.APIURL = v3
	}
	if !strings.HasSuffix(o.APIURL, "/") {
		o.APIURL += "/"
	}
	if o.WebhookPath == "" {
		o.WebhookPath = DefaultWebhookPath
	}
	if o.Name == "" {
		o.Name = "Bumper"
		if o.Org != "" {
			o.Name = "Bumper for " + o.Org
		}
	}
	if o.Dir == "" {
		o.Dir = "bumper-app"
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	return nil
}

// Result is the App that was created and where its files went.
type Result struct {
	App   Identity
	Dir   string
	Files []string
}

// Identity is what GitHub says of the new App; nothing in it is secret.
type Identity struct {
	ID       int64  `json:"id"`
	Slug     string `json:"slug"`
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	ClientID string `json:"client_id"`
	HTMLURL  string `json:"html_url"`
}

// Run serves the local page on loopback, waits for GitHub to send the browser back
// with the code, exchanges it for the App's credentials and writes them to o.Dir. It
// refuses to start when o.Dir already holds any of the files it writes, so a second
// run never replaces an App's key. It returns when the files are written, the
// exchange failed, or ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	findAPI := o.APIURL == ""
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := checkFree(o.Dir); err != nil {
		return nil, err
	}
	if findAPI {
		api, err := DiscoverAPIURL(ctx, o.HTTPClient, o.GitHubURL)
		if err != nil {
			return nil, err
		}
		o.APIURL = api
	}
	if o.OIDCIssuer == "" {
		o.OIDCIssuer = DiscoverOIDCIssuer(ctx, o.HTTPClient, o.GitHubURL, o.APIURL)
	}
	state, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s for the local page: %w", o.Listen, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("the local page must listen on loopback, not %s: it hands out the App's credentials", ln.Addr())
	}
	pageURL := "http://" + ln.Addr().String() + "/"
	m, err := NewManifest(o.Name, o.PublicURL, o.WebhookPath, pageURL+"callback")
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	f := &flow{o: o, state: state, manifest: m, done: make(chan outcome, 1)}
	srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}()
	if o.Ready != nil {
		o.Ready(pageURL)
	}
	select {
	case out := <-f.done:
		return out.res, out.err
	case <-ctx.Done():
		return nil, fmt.Errorf("stopped before GitHub sent the browser back: %w", ctx.Err())
	}
}

type outcome struct {
	res *Result
	err error
}

// flow is one manifest flow's local pages.
type flow struct {
	o        Options
	state    string
	manifest Manifest

	mu       sync.Mutex
	finished bool
	done     chan outcome
}

func (f *flow) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", f.start)
	mux.HandleFunc("GET /callback", f.callback)
	return mux
}

// pageCSP lets the page post its one form to GitHub and load nothing.
func pageCSP(githubURL string) string {
	origin := githubURL
	if u, err := url.Parse(githubURL); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	return "default-src 'none'; style-src 'unsafe-inline'; form-action " + origin + "; base-uri 'none'; frame-ancestors 'none'"
}

func (f *flow) start(w http.ResponseWriter, r *http.Request) {
	owner := "your account"
	if f.o.Org != "" {
		owner = "the organisation " + f.o.Org
	}
	f.page(w, http.StatusOK, startPage, map[string]any{
		"Action": NewAppURL(f.o.GitHubURL, f.o.Org, f.state), "Manifest": f.manifest.JSON(),
		"Name": f.manifest.Name, "Owner": owner, "Hook": f.manifest.Hook.URL,
		"Permissions": Permissions(), "Events": Events(), "GitHub": f.o.GitHubURL,
	})
}

// callback is where GitHub sends the browser back. A wrong or missing state is not
// ours (another page, a forged link): refused, and the flow keeps waiting.
func (f *flow) callback(w http.ResponseWriter, r *http.Request) {
	log := zerolog.Ctx(r.Context())
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state)) != 1 {
		log.Warn().Msg("refused a callback whose state is not this flow's")
		f.page(w, http.StatusBadRequest, messagePage, map[string]any{"Title": "Not this setup's App",
			"Text": "The state in this address is not the one this `bumper setup` sent, so the code is not exchanged. Start again from the page bumper setup printed."})
		return
	}
	code := q.Get("code")
	if code == "" {
		f.page(w, http.StatusBadRequest, messagePage, map[string]any{"Title": "No code",
			"Text": "GitHub sent the browser back without a code: the App was not created. Start again from the page bumper setup printed."})
		return
	}
	f.mu.Lock()
	if f.finished {
		f.mu.Unlock()
		f.page(w, http.StatusConflict, messagePage, map[string]any{"Title": "Already done",
			"Text": "This setup already exchanged its code; see the terminal."})
		return
	}
	f.finished = true
	f.mu.Unlock()
	res, err := f.exchange(r.Context(), code)
	if err != nil {
		f.page(w, http.StatusBadGateway, messagePage, map[string]any{"Title": "The App's credentials could not be saved",
			"Text": err.Error()})
		f.done <- outcome{err: err}
		return
	}
	f.page(w, http.StatusOK, donePage, map[string]any{"App": res.App, "Dir": res.Dir, "Files": res.Files})
	f.done <- outcome{res: res}
}

// exchange trades the code for the App's credentials (POST
// /app-manifests/{code}/conversions, no authentication: the code is the credential)
// and writes them.
func (f *flow) exchange(ctx context.Context, code string) (*Result, error) {
	// The API URL is used as given, or as found: go-github's enterprise helper would
	// add /api/v3/ to an API at the root of its address.
	base, err := url.Parse(f.o.APIURL)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the API URL %q: %w", f.o.APIURL, err)
	}
	gh := gogithub.NewClient(f.o.HTTPClient)
	gh.BaseURL = base
	cfg, _, err := gh.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("failed to exchange the manifest code (it expires after %s and works once): %w", CodeLifetime, err)
	}
	if cfg.GetID() == 0 || cfg.GetPEM() == "" || cfg.GetWebhookSecret() == "" {
		return nil, errors.New("GitHub's answer to the code exchange lacks the App's ID, private key or webhook secret")
	}
	id := Identity{ID: cfg.GetID(), Slug: cfg.GetSlug(), Name: cfg.GetName(), Owner: cfg.GetOwner().GetLogin(),
		ClientID: cfg.GetClientID(), HTMLURL: cfg.GetHTMLURL()}
	files, err := writeFiles(f.o, id, cfg.GetPEM(), cfg.GetWebhookSecret())
	if err != nil {
		return nil, err
	}
	return &Result{App: id, Dir: f.o.Dir, Files: files}, nil
}

func (f *flow) page(w http.ResponseWriter, status int, t *template.Template, data map[string]any) {
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP(f.o.GitHubURL))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String())
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("failed to read random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// WriteRequirements prints what the App asks for and why, as `bumper setup` shows it
// before the admin creates the App.
func WriteRequirements(w io.Writer) {
	fmt.Fprintln(w, "The App asks for these repository permissions:")
	for _, p := range Permissions() {
		fmt.Fprintf(w, "  %-15s %-6s %s\n", p.Name, p.Access, p.Why)
	}
	fmt.Fprintln(w, "and these webhook events (installation events come without asking):")
	for _, e := range Events() {
		fmt.Fprintf(w, "  %-15s %s\n", e.Name, e.Why)
	}
}

// WriteSummary prints what was created and what to do next.
func (r *Result) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "Created the GitHub App %q (ID %d, %s), owned by %s.\n", r.App.Name, r.App.ID, r.App.Slug, r.App.Owner)
	fmt.Fprintf(w, "Wrote to %s:\n", r.Dir)
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	fmt.Fprintln(w, "Next:")
	fmt.Fprintf(w, "  1. install the App on the repositories Bumper works on: %s/installations/new\n", strings.TrimRight(r.App.HTMLURL, "/"))
	// --host=false: this is the admin's machine, not a runner host, whose checks would
	// all fail here and hide the App's and the repository's findings.
	fmt.Fprintf(w, "  2. check each repository from here, and do what it says: bumper doctor --host=false --config %s --repo OWNER/REPO\n", joinPath(r.Dir, ServeConfigFile))
	// serve.yml names the key relative to itself, so the directory works where it lands.
	fmt.Fprintf(w, "  3. copy %s to serve's host and start serve there, behind TLS: bumper serve --config %s (docs/install.md, \"Run serve\")\n",
		r.Dir, joinPath(filepath.Base(r.Dir), ServeConfigFile))
}
