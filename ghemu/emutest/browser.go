package emutest

import (
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu"
)

// Browser is an HTTP client that does with the emulator's pages (and `bumper setup`'s
// local page) what a browser does: it keeps cookies, follows redirects, and sends a
// form's fields, with the page's origin, to the form's action. Tests drive an admin's
// clicks with it.
type Browser struct {
	t testing.TB
	c *http.Client
}

// NewBrowser returns a Browser with an empty cookie jar.
func NewBrowser(t testing.TB) *Browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Browser{t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

var (
	formActionRE = regexp.MustCompile(`<form action="([^"]+)" method="post">`)
	formFieldRE  = regexp.MustCompile(`<input type="(?:hidden|text)" name="([a-z_]+)" value="([^"]*)"`)
	csrfRE       = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	installRE    = regexp.MustCompile(`href="(/apps/[^"]+/installations/new/permissions\?[^"]+)"`)
)

// Do sends one request (a form's fields when form is not nil, with origin as the page's
// origin) and returns the final status, body and URL after redirects.
func (b *Browser) Do(method, u string, form url.Values, origin string) (int, string, *url.URL) {
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

// Submit posts the first form of page (loaded from pageURL) with its own fields and
// extra.
func (b *Browser) Submit(pageURL *url.URL, page string, extra url.Values) (int, string, *url.URL) {
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
	if csrf := csrfRE.FindStringSubmatch(page); csrf != nil {
		vals.Set("csrf", csrf[1])
	}
	maps.Copy(vals, extra)
	return b.Do(http.MethodPost, action.String(), vals, pageURL.Scheme+"://"+pageURL.Host)
}

// CreateApp clicks through `bumper setup`'s manifest flow from its local page: the page's
// button to the emulator's manifest page, whose button creates the App for org and sends
// the browser back to setup's callback.
func (b *Browser) CreateApp(local, org string) {
	b.t.Helper()
	status, page, at := b.Do(http.MethodGet, local, nil, "")
	if status != http.StatusOK {
		b.t.Fatalf("setup's page: %d\n%s", status, page)
	}
	status, page, at = b.Submit(at, page, nil)
	if status != http.StatusOK || !strings.Contains(page, "Create GitHub App for "+org) {
		b.t.Fatalf("the emulator's manifest page: %d\n%s", status, page)
	}
	status, page, at = b.Submit(at, page, nil)
	if status != http.StatusOK || !strings.HasPrefix(at.String(), local+"callback?") || !strings.Contains(page, "installations/new") {
		b.t.Fatalf("back at %s: %d\n%s", at, status, page)
	}
}

// InstallApp signs admin in on the emulator and installs the App slug on repos (names
// in the owner the install page offers) through the install pages, as an admin of
// them does.
func (b *Browser) InstallApp(e *ghemu.Emulator, slug, admin string, repos []string) {
	b.t.Helper()
	status, page, at := b.Do(http.MethodGet, e.BaseURL()+"/login?return="+url.QueryEscape("/apps/"+slug+"/installations/new"), nil, "")
	if status != http.StatusOK {
		b.t.Fatalf("sign-in page: %d", status)
	}
	// The sign-in form's attributes come in GitHub's order; Submit reads the action first.
	status, page, at = b.Submit(at, strings.Replace(page, `<form class="box-body form" method="post" action="/session">`, `<form action="/session" method="post">`, 1),
		url.Values{"login": {admin}, "token": {e.UserToken(admin)}})
	link := installRE.FindStringSubmatch(page)
	if status != http.StatusOK || at.Path != "/apps/"+slug+"/installations/new" || link == nil {
		b.t.Fatalf("the install page at %s: %d\n%s", at, status, page)
	}
	status, page, at = b.Do(http.MethodGet, e.BaseURL()+html.UnescapeString(link[1]), nil, "")
	if status != http.StatusOK || !strings.Contains(page, `id="install"`) {
		b.t.Fatalf("the repositories page: %d\n%s", status, page)
	}
	status, page, at = b.Submit(at, page, url.Values{"repository_selection": {"selected"}, "repository_ids": repos})
	if status != http.StatusOK || !strings.Contains(at.Path, "/settings/installations/") {
		b.t.Fatalf("after installing, at %s: %d\n%s", at, status, page)
	}
}
