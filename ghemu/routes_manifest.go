package ghemu

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// GitHub's App manifest flow ("Registering a GitHub App from a manifest"): a page posts
// a form with a `manifest` field to BASE/settings/apps/new (or
// BASE/organizations/{org}/settings/apps/new) with ?state=; GitHub shows the App it is
// about to create; on "Create" it creates it and sends the browser to the manifest's
// redirect_url with a one-hour code and the state; POST /app-manifests/{code}/conversions
// trades the code for the App's credentials.
//
// The emulator hosts one App, so an App created this way replaces the one it had: the
// new App has its own ID, key, webhook secret, permissions and events, and, as any new
// App on GitHub, no installation yet (InstallApp, or the control route, installs it).
// The previous App's installations and tokens go with it.

// manifestCodeTTL is how long a code can be exchanged, as on GitHub.
const manifestCodeTTL = time.Hour

// manifestCode is a code GitHub hands the browser: it is exchanged once, within the hour.
type manifestCode struct {
	AppID         int64     `json:"app_id"`
	PEM           string    `json:"pem"`
	ClientSecret  string    `json:"client_secret"`
	WebhookSecret string    `json:"webhook_secret"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// appManifest is what GitHub reads of a manifest.
type appManifest struct {
	Name        string `json:"name"`
	URL         string `json:"url"`
	Description string `json:"description"`
	Hook        struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

var manifestPathRE = regexp.MustCompile(`^/(?:organizations/([^/]+)/)?settings/apps/new(/confirm)?/?$`)

// isManifestPage reports whether r is a post to the manifest pages.
func isManifestPage(r *http.Request) bool {
	return r.Method == http.MethodPost && manifestPathRE.MatchString(r.URL.Path)
}

// webManifest is the manifest page's view.
type webManifest struct {
	Action       string
	ManifestJSON string
	State        string
	Name         string
	Owner        string
	People       []string
	URL          string
	Hook         string
	Redirect     string
	Description  string
	Permissions  [][2]string
	Events       []string
}

// serveManifestPage answers both posts: the admin's page's form (show the App), and the
// shown page's own form (create it and send the browser back).
func (e *Emulator) serveManifestPage(w http.ResponseWriter, r *http.Request) {
	m := manifestPathRE.FindStringSubmatch(r.URL.Path)
	org, confirm := m[1], m[2] != ""
	if err := r.ParseForm(); err != nil {
		e.manifestError(w, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	var man appManifest
	if err := json.Unmarshal([]byte(r.PostForm.Get("manifest")), &man); err != nil {
		e.manifestError(w, http.StatusUnprocessableEntity, "The manifest is not valid JSON: "+err.Error())
		return
	}
	if name := strings.TrimSpace(r.PostForm.Get("name")); confirm && name != "" {
		man.Name = name
	}
	if msg := validateManifest(man); msg != "" {
		e.manifestError(w, http.StatusUnprocessableEntity, msg)
		return
	}
	state := r.URL.Query().Get("state")
	if confirm {
		state = r.PostForm.Get("state")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var people []string
	owner := ""
	if org != "" {
		u := e.st.Users[key(org)]
		if u == nil || u.Type != "Organization" {
			e.manifestError(w, http.StatusNotFound, "No organisation "+org+".")
			return
		}
		owner = u.Login
	} else {
		for _, u := range e.st.Users {
			if u.Type == "User" {
				people = append(people, u.Login)
			}
		}
		sort.Strings(people)
		owner = r.PostForm.Get("owner")
		if confirm && !slices.Contains(people, owner) {
			e.manifestError(w, http.StatusUnprocessableEntity, "Choose the account that owns the App.")
			return
		}
	}
	if !confirm {
		e.showManifest(w, r, man, org, owner, people, state)
		return
	}
	code, err := e.createAppLocked(man, owner)
	if err != nil {
		e.manifestError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	back, _ := url.Parse(man.RedirectURL) // validated
	q := back.Query()
	q.Set("code", code)
	if state != "" {
		q.Set("state", state)
	}
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (e *Emulator) showManifest(w http.ResponseWriter, r *http.Request, man appManifest, org, owner string, people []string, state string) {
	raw, _ := json.Marshal(man)
	v := webManifest{Action: strings.TrimSuffix(r.URL.Path, "/") + "/confirm", ManifestJSON: string(raw), State: state,
		Name: man.Name, Owner: owner, People: people, URL: man.URL, Hook: man.Hook.URL, Redirect: man.RedirectURL,
		Description: man.Description}
	for _, p := range slices.Sorted(maps.Keys(man.DefaultPermissions)) {
		v.Permissions = append(v.Permissions, [2]string{p, man.DefaultPermissions[p]})
	}
	v.Events = slices.Sorted(slices.Values(man.DefaultEvents))
	title := "Create GitHub App"
	if org != "" {
		title += " for " + owner
	}
	// The page's form posts here, and its answer redirects to the manifest's
	// redirect_url: both must be allowed form targets.
	redirect, _ := url.Parse(man.RedirectURL)
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "+
		redirect.Scheme+"://"+redirect.Host+"; base-uri 'none'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
	e.writePage(w, http.StatusOK, "manifest", webPage{Title: title, Owner: org, Data: v})
}

func (e *Emulator) manifestError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Security-Policy", webCSP)
	e.writePage(w, status, "error", webPage{Title: http.StatusText(status), Data: msg})
}

// validateManifest checks what GitHub requires of a manifest; "" when it is fine.
func validateManifest(m appManifest) string {
	if strings.TrimSpace(m.Name) == "" || len(m.Name) > 34 {
		return "The App needs a name of 1 to 34 characters."
	}
	if !absoluteHTTP(m.URL) {
		return "The manifest's url (the App's homepage) must be an absolute http(s) URL."
	}
	if (m.Hook.Active == nil || *m.Hook.Active) && !absoluteHTTP(m.Hook.URL) {
		return "hook_attributes.url must be an absolute http(s) URL while the webhook is active."
	}
	if !absoluteHTTP(m.RedirectURL) {
		return "The manifest's redirect_url must be an absolute http(s) URL: the code is sent there."
	}
	for p, lvl := range m.DefaultPermissions {
		if lvl != "read" && lvl != "write" && lvl != "admin" {
			return fmt.Sprintf("Permission %s is %q; use read, write or admin.", p, lvl)
		}
	}
	for _, ev := range m.DefaultEvents {
		if ev == "" || ev == "installation" || ev == "installation_repositories" {
			return fmt.Sprintf("Event %q cannot be subscribed to (installation events are always sent).", ev)
		}
	}
	return ""
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// createAppLocked registers the manifest's App as the emulator's App and returns the
// code that trades for its credentials. Callers hold e.mu.
func (e *Emulator) createAppLocked(m appManifest, owner string) (string, error) {
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(m.Name), "-"), "-")
	if slug == "" {
		return "", fmt.Errorf("the name %q gives no slug: use letters or digits", m.Name)
	}
	bot := slug + "[bot]"
	if u := e.st.Users[key(bot)]; u != nil && !strings.EqualFold(slug, e.st.App.Slug) {
		return "", fmt.Errorf("name %q is already in use by another App", m.Name)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("failed to generate the App's key: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(e.dir, appKeyFile), keyPEM(k), 0o600); err != nil {
		return "", fmt.Errorf("failed to keep the App's key: %w", err)
	}
	perms := maps.Clone(m.DefaultPermissions)
	if perms == nil {
		perms = map[string]string{}
	}
	if perms["metadata"] == "" {
		perms["metadata"] = "read" // every App has it
	}
	events := slices.Clone(m.DefaultEvents)
	if events == nil {
		events = []string{}
	}
	hook := m.Hook.URL
	if m.Hook.Active != nil && !*m.Hook.Active {
		hook = ""
	}
	id := e.st.nextID()
	e.appKey = k
	e.st.App = appInfo{ID: id, Slug: slug, Name: m.Name, Owner: owner, ClientID: "Iv23" + randomToken("")[:16],
		WebhookURL: hook, WebhookSecret: randomToken("whsec_"), Permissions: perms, Events: events,
		CreatedAt: e.timestamp()}
	if e.st.Users[key(bot)] == nil {
		e.st.Users[key(bot)] = &user{ID: e.st.nextID(), Login: bot, Type: "Bot"}
	}
	e.st.Installations = map[int64]*installation{}
	e.st.Tokens = map[string]*installToken{}
	code := strings.ToLower(randomToken(""))
	if e.st.ManifestCodes == nil {
		e.st.ManifestCodes = map[string]*manifestCode{}
	}
	for c, mc := range e.st.ManifestCodes {
		if !e.now().Before(mc.ExpiresAt) {
			delete(e.st.ManifestCodes, c)
		}
	}
	e.st.ManifestCodes[code] = &manifestCode{AppID: id, PEM: string(keyPEM(k)), ClientSecret: randomToken("")[:20] + randomToken("")[:20],
		WebhookSecret: e.st.App.WebhookSecret, ExpiresAt: e.timestamp().Add(manifestCodeTTL)}
	e.saveLocked()
	return code, nil
}

// convertManifest is POST /app-manifests/{code}/conversions: the code, once and within
// the hour, gives the App's private key, webhook secret and OAuth client secret.
func (e *Emulator) convertManifest(w http.ResponseWriter, r *http.Request, c *call) {
	code := c.params["code"]
	mc := e.st.ManifestCodes[code]
	if mc == nil || !e.now().Before(mc.ExpiresAt) || mc.AppID != e.st.App.ID {
		writeError(w, errNotFound())
		return
	}
	delete(e.st.ManifestCodes, code)
	c.mutated = true
	out := e.renderApp()
	out["client_secret"] = mc.ClientSecret
	out["webhook_secret"] = mc.WebhookSecret
	out["pem"] = mc.PEM
	writeJSON(w, http.StatusCreated, out)
}

// InstallApp installs the App on an account, for the named repositories (none: all of
// them), as its owner does on the App's "Install" page, and sends the "installation
// created" webhook. It returns the installation's ID.
func (e *Emulator) InstallApp(account string, repos []string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	acct := e.st.Users[key(account)]
	if acct == nil || (acct.Type != "User" && acct.Type != "Organization") {
		return 0, fmt.Errorf("no user or organisation %q", account)
	}
	for _, in := range e.st.Installations {
		if strings.EqualFold(in.Account, account) {
			return 0, fmt.Errorf("the App is already installed on %s (installation %d)", account, in.ID)
		}
	}
	in := &installation{ID: e.st.nextID(), Account: acct.Login, AllRepos: len(repos) == 0,
		Permissions: maps.Clone(e.st.App.Permissions), Events: slices.Clone(e.st.App.Events), CreatedAt: e.timestamp()}
	for _, name := range repos {
		rp := e.st.repoByName(acct.Login, name)
		if rp == nil {
			return 0, fmt.Errorf("no repository %s/%s", acct.Login, name)
		}
		in.RepoIDs = append(in.RepoIDs, rp.ID)
	}
	e.st.Installations[in.ID] = in
	e.emitInstallation(in, "created")
	e.saveLocked()
	return in.ID, nil
}

// serveInstallControl is POST /_emulator/app/installations {"account", "repositories"}.
func (e *Emulator) serveInstallControl(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Account      string   `json:"account"`
		Repositories []string `json:"repositories"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	id, err := e.InstallApp(req.Account, req.Repositories)
	if err != nil {
		writeError(w, errUnprocessable(err.Error()))
		return
	}
	writeJSON(w, http.StatusCreated, obj{"id": id})
}
