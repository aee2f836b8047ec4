package web

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// GitHub's App manifest flow ("Registering a GitHub App from a manifest"): a page posts
// a form with a `manifest` field to BASE/settings/apps/new (or
// BASE/organizations/{org}/settings/apps/new) with ?state=; GitHub shows the App it is
// about to create; on "Create" it creates it and sends the browser to the manifest's
// redirect_url with a one-hour code and the state; POST /app-manifests/{code}/conversions
// (the REST API) trades the code for the App's credentials.
//
// The emulator hosts one App, so an App created this way replaces the one it had: the
// new App has its own ID, key, webhook secret, permissions and events, and, as any new
// App on GitHub, no installation yet (InstallApp, or the control route, installs it).
// The previous App's installations and tokens go with it.

// manifestCodeTTL is how long a code can be exchanged, as on GitHub.
const manifestCodeTTL = time.Hour

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
	SetupURL           string            `json:"setup_url,omitempty"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

var manifestPathRE = regexp.MustCompile(`^/(?:organizations/([^/]+)/)?settings/apps/new(/confirm)?/?$`)

// IsManifestPage reports whether r is a post to the manifest pages.
func IsManifestPage(r *http.Request) bool {
	return r.Method == http.MethodPost && manifestPathRE.MatchString(r.URL.Path)
}

// manifestView is the manifest page's view.
type manifestView struct {
	Action       string
	ManifestJSON string
	State        string
	Name         string
	Owner        string
	People       []string
	URL          string
	Hook         string
	Redirect     string
	Setup        string
	Description  string
	Permissions  [][2]string
	Events       []string
}

// ServeManifest answers both posts of the manifest flow (IsManifestPage): the admin's
// page's form (show the App), and the shown page's own form (create it and send the
// browser back).
func (v *View) ServeManifest(w http.ResponseWriter, r *http.Request) {
	m := manifestPathRE.FindStringSubmatch(r.URL.Path)
	org, confirm := m[1], m[2] != ""
	if err := r.ParseForm(); err != nil {
		v.manifestError(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	var man appManifest
	if err := json.Unmarshal([]byte(r.PostForm.Get("manifest")), &man); err != nil {
		v.manifestError(w, r, http.StatusUnprocessableEntity, "The manifest is not valid JSON: "+err.Error())
		return
	}
	if name := strings.TrimSpace(r.PostForm.Get("name")); confirm && name != "" {
		man.Name = name
	}
	if msg := validateManifest(man); msg != "" {
		v.manifestError(w, r, http.StatusUnprocessableEntity, msg)
		return
	}
	flowState := r.URL.Query().Get("state")
	if confirm {
		flowState = r.PostForm.Get("state")
	}
	var people []string
	var owner, code string
	status, msg := 0, ""
	v.store.Do(func(st *state.World) {
		if org != "" {
			u := st.User(org)
			if u == nil || u.Type != "Organization" {
				status, msg = http.StatusNotFound, "No organisation "+org+"."
				return
			}
			owner = u.Login
		} else {
			for _, u := range st.Users() {
				if u.Type == "User" {
					people = append(people, u.Login)
				}
			}
			slices.Sort(people)
			owner = r.PostForm.Get("owner")
			if confirm && !slices.Contains(people, owner) {
				status, msg = http.StatusUnprocessableEntity, "Choose the account that owns the App."
				return
			}
		}
		if !confirm {
			return
		}
		var err error
		if code, err = createApp(st, man, owner); err != nil {
			status, msg = http.StatusUnprocessableEntity, err.Error()
		}
	})
	if status != 0 {
		v.manifestError(w, r, status, msg)
		return
	}
	if !confirm {
		v.showManifest(w, r, man, org, owner, people, flowState)
		return
	}
	back, _ := url.Parse(man.RedirectURL) // validated
	q := back.Query()
	q.Set("code", code)
	if flowState != "" {
		q.Set("state", flowState)
	}
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (v *View) showManifest(w http.ResponseWriter, r *http.Request, man appManifest, org, owner string, people []string, flowState string) {
	raw, _ := json.Marshal(man)
	mv := manifestView{Action: strings.TrimSuffix(r.URL.Path, "/") + "/confirm", ManifestJSON: string(raw), State: flowState,
		Name: man.Name, Owner: owner, People: people, URL: man.URL, Hook: man.Hook.URL, Redirect: man.RedirectURL,
		Setup: man.SetupURL, Description: man.Description}
	for _, p := range slices.Sorted(maps.Keys(man.DefaultPermissions)) {
		mv.Permissions = append(mv.Permissions, [2]string{p, man.DefaultPermissions[p]})
	}
	mv.Events = slices.Sorted(slices.Values(man.DefaultEvents))
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
	v.writePage(w, r, http.StatusOK, "manifest", page{Title: title, Owner: org, Data: mv})
}

func (v *View) manifestError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Content-Security-Policy", csp)
	v.writePage(w, r, status, "error", page{Title: http.StatusText(status), Data: msg})
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
	if m.SetupURL != "" && !absoluteHTTP(m.SetupURL) {
		return "The manifest's setup_url must be an absolute http(s) URL: the browser goes there once the App is installed."
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

// createApp registers the manifest's App as the world's App, inside the caller's
// transaction, and returns the code that trades for its credentials.
func createApp(w *state.World, m appManifest, owner string) (string, error) {
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(m.Name), "-"), "-")
	if slug == "" {
		return "", fmt.Errorf("the name %q gives no slug: use letters or digits", m.Name)
	}
	bot := slug + "[bot]"
	if u := w.User(bot); u != nil && !strings.EqualFold(slug, w.App().Slug) {
		return "", fmt.Errorf("name %q is already in use by another App", m.Name)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("failed to generate the App's key: %w", err)
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
	id := w.NextID()
	app := state.App{ID: id, Slug: slug, Name: m.Name, Owner: owner, ClientID: "Iv23" + state.RandomToken("")[:16],
		WebhookURL: hook, WebhookSecret: state.RandomToken("whsec_"), Permissions: perms, Events: events,
		CreatedAt: w.Timestamp(), SetupURL: m.SetupURL, Public: m.Public}
	if err := w.ReplaceApp(app, k); err != nil {
		return "", err
	}
	if w.User(bot) == nil {
		w.AddUser(&state.User{ID: w.NextID(), Login: bot, Type: "Bot"})
	}
	code := strings.ToLower(state.RandomToken(""))
	w.AddManifestCode(code, &state.ManifestCode{AppID: id, PEM: string(state.KeyPEM(k)),
		ClientSecret:  state.RandomToken("")[:20] + state.RandomToken("")[:20],
		WebhookSecret: app.WebhookSecret, ExpiresAt: w.Timestamp().Add(manifestCodeTTL)})
	return code, nil
}
