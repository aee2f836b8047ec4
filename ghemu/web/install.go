package web

import (
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/state"
)

// The App's pages, as GitHub has them: its public page (BASE/apps/{slug}, the App's
// html_url), its settings page (BASE/settings/apps/{slug}, or
// BASE/organizations/{org}/settings/apps/{slug}), the installation flow
// (BASE/apps/{slug}/installations/new: choose the account; …/new/permissions?target_id=N:
// the permissions, all or selected repositories, and "Install", a form for a signed-in
// local user), and an installation's settings page
// (BASE/[organizations/{org}/]settings/installations/{id}), where the browser lands
// after installing when the App has no setup URL.

var (
	appPageRE      = regexp.MustCompile(`^/apps/([^/]+)/?$`)
	appSettingsRE  = regexp.MustCompile(`^/(?:organizations/([^/]+)/)?settings/apps/([^/]+)/?$`)
	installNewRE   = regexp.MustCompile(`^/apps/([^/]+)/installations/new/?$`)
	installPermsRE = regexp.MustCompile(`^/apps/([^/]+)/installations/new/permissions/?$`)
	installationRE = regexp.MustCompile(`^/(?:organizations/([^/]+)/)?settings/installations/(\d+)/?$`)
)

// Installer installs the App on account for repos (none: all), inside the caller's
// transaction, with GitHub's installation webhook (the emulator's InstallApp).
type Installer func(w *state.World, account string, repos []string) (*state.Installation, error)

// SetInstaller gives the view what its install form calls.
func (v *View) SetInstaller(fn Installer) { v.install = fn }

// isInstallForm reports whether a POST to path is the install form.
func isInstallForm(path string) bool { return installPermsRE.MatchString(path) }

// appView is the App's public and settings pages'.
type appView struct {
	App           state.App
	Settings      bool
	InstallURL    string
	Permissions   [][2]string
	Events        []string
	Installations []installationView
}

// installationView is one installation, as its settings page and the App's pages show it.
type installationView struct {
	ID       int64
	Account  string
	Org      bool
	All      bool
	Repos    []string
	URL      string
	App      state.App
	Perms    [][2]string
	Events   []string
	Selected map[string]bool
}

// accountView is one account the install page offers.
type accountView struct {
	Login, Type  string
	ID           int64
	Installation int64
	URL          string
}

// installView is the install pages' (the accounts, then the repositories).
type installView struct {
	App        state.App
	Accounts   []accountView
	Account    accountView
	Repos      []string
	Perms      [][2]string
	Events     []string
	Action     string
	State      string
	CSRF       string
	SignIn     string
	Installed  int64
	InstallURL string
}

func permRows(p map[string]string) [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		out = append(out, [2]string{k, p[k]})
	}
	return out
}

// installationURL is an installation's settings page.
func installationURL(st *state.World, in *state.Installation) string {
	if u := st.User(in.Account); u != nil && u.Type == "Organization" {
		return "/organizations/" + url.PathEscape(in.Account) + "/settings/installations/" + strconv.FormatInt(in.ID, 10)
	}
	return "/settings/installations/" + strconv.FormatInt(in.ID, 10)
}

func describeInstallation(st *state.World, in *state.Installation) installationView {
	iv := installationView{ID: in.ID, Account: in.Account, All: in.AllRepos, URL: installationURL(st, in), App: st.App(),
		Perms: permRows(in.Permissions), Events: slices.Sorted(slices.Values(in.Events))}
	if u := st.User(in.Account); u != nil {
		iv.Org = u.Type == "Organization"
	}
	for _, rp := range st.Repos() {
		if st.InstallationFor(rp) == in {
			iv.Repos = append(iv.Repos, rp.FullName())
		}
	}
	return iv
}

// serveAppPages answers the App's GET pages; false when the path is none of them.
func (v *View) serveAppPages(w http.ResponseWriter, r *http.Request) (bool, error) {
	p := r.URL.Path
	switch {
	case appPageRE.MatchString(p):
		return true, v.appPage(w, r, appPageRE.FindStringSubmatch(p)[1], "", false)
	case appSettingsRE.MatchString(p):
		m := appSettingsRE.FindStringSubmatch(p)
		return true, v.appPage(w, r, m[2], m[1], true)
	case installNewRE.MatchString(p):
		return true, v.installAccounts(w, r, installNewRE.FindStringSubmatch(p)[1])
	case installPermsRE.MatchString(p):
		return true, v.installRepos(w, r, installPermsRE.FindStringSubmatch(p)[1])
	case installationRE.MatchString(p):
		m := installationRE.FindStringSubmatch(p)
		return true, v.installationPage(w, r, m[1], m[2])
	}
	return false, nil
}

func (v *View) appPage(w http.ResponseWriter, r *http.Request, slug, org string, settings bool) error {
	var av appView
	found := false
	v.store.Do(func(st *state.World) {
		app := st.App()
		if !strings.EqualFold(app.Slug, slug) {
			return
		}
		if settings {
			// Settings are the owner's: an organisation's App under its path, a person's under theirs.
			ou := st.User(app.Owner)
			isOrg := ou != nil && ou.Type == "Organization"
			if isOrg != (org != "") || (org != "" && !strings.EqualFold(org, app.Owner)) {
				return
			}
		}
		found = true
		av = appView{App: app, Settings: settings, InstallURL: "/apps/" + app.Slug + "/installations/new",
			Permissions: permRows(app.Permissions), Events: slices.Sorted(slices.Values(app.Events))}
		for _, in := range st.Installations() {
			av.Installations = append(av.Installations, describeInstallation(st, in))
		}
	})
	if !found {
		return notFound("App")
	}
	title := av.App.Name
	if settings {
		title = "Settings · " + av.App.Name
	}
	v.writePage(w, r, http.StatusOK, "app", page{Title: title, Data: av})
	return nil
}

// installable are the accounts the App may be installed on: its owner's alone for a
// private App; every person and organisation for a public one.
func installable(st *state.World) []*state.User {
	app := st.App()
	var out []*state.User
	for _, u := range st.Users() {
		if u.Type != "User" && u.Type != "Organization" {
			continue
		}
		if app.Public || strings.EqualFold(u.Login, app.Owner) {
			out = append(out, u)
		}
	}
	return out
}

func (v *View) installAccounts(w http.ResponseWriter, r *http.Request, slug string) error {
	var iv installView
	found := false
	v.store.Do(func(st *state.World) {
		app := st.App()
		if !strings.EqualFold(app.Slug, slug) {
			return
		}
		found = true
		iv.App = app
		for _, u := range installable(st) {
			a := accountView{Login: u.Login, Type: u.Type, ID: u.ID}
			if in := st.InstallationOn(u.Login); in != nil {
				a.Installation, a.URL = in.ID, installationURL(st, in)
			} else {
				q := url.Values{"target_id": {strconv.FormatInt(u.ID, 10)}}
				if s := r.URL.Query().Get("state"); s != "" {
					q.Set("state", s)
				}
				a.URL = "/apps/" + app.Slug + "/installations/new/permissions?" + q.Encode()
			}
			iv.Accounts = append(iv.Accounts, a)
		}
	})
	if !found {
		return notFound("App")
	}
	v.writePage(w, r, http.StatusOK, "install", page{Title: "Install " + iv.App.Name, Data: iv})
	return nil
}

// installTarget is the account target_id names, if the App may be installed on it.
func installTarget(st *state.World, target string) *state.User {
	id, err := strconv.ParseInt(target, 10, 64)
	if err != nil {
		return nil
	}
	for _, u := range installable(st) {
		if u.ID == id {
			return u
		}
	}
	return nil
}

func (v *View) installRepos(w http.ResponseWriter, r *http.Request, slug string) error {
	var iv installView
	status := 0
	v.store.Do(func(st *state.World) {
		app := st.App()
		acct := installTarget(st, r.URL.Query().Get("target_id"))
		if !strings.EqualFold(app.Slug, slug) || acct == nil {
			status = http.StatusNotFound
			return
		}
		iv = installView{App: app, Account: accountView{Login: acct.Login, Type: acct.Type, ID: acct.ID},
			Perms: permRows(app.Permissions), Events: slices.Sorted(slices.Values(app.Events)),
			Action: r.URL.Path + "?" + r.URL.RawQuery, State: r.URL.Query().Get("state"),
			InstallURL: "/apps/" + app.Slug + "/installations/new"}
		if in := st.InstallationOn(acct.Login); in != nil {
			iv.Installed = in.ID
		}
		for _, rp := range st.Repos() {
			if strings.EqualFold(rp.Owner, acct.Login) {
				iv.Repos = append(iv.Repos, rp.Name)
			}
		}
	})
	if status != 0 {
		return notFound("App or account")
	}
	if ss, ok := v.sessionOf(r); ok && ss.login != "" {
		iv.CSRF = ss.csrf
	} else {
		iv.SignIn = "/login?" + url.Values{"return": {r.URL.RequestURI()}}.Encode()
	}
	w.Header().Set("Content-Security-Policy", installCSP(iv.App.SetupURL))
	v.writePage(w, r, http.StatusOK, "install", page{Title: "Install " + iv.App.Name + " on " + iv.Account.Login, Data: iv})
	return nil
}

// installCSP is the page CSP, with the App's setup URL allowed as a form target: the
// install form's answer redirects there.
func installCSP(setupURL string) string {
	if u, err := url.Parse(setupURL); err == nil && setupURL != "" && u.Host != "" {
		return strings.Replace(csp, "form-action 'self'", "form-action 'self' "+u.Scheme+"://"+u.Host, 1)
	}
	return csp
}

func (v *View) installationPage(w http.ResponseWriter, r *http.Request, org, idText string) error {
	id, _ := strconv.ParseInt(idText, 10, 64)
	var iv installationView
	found := false
	v.store.Do(func(st *state.World) {
		in := st.Installation(id)
		if in == nil {
			return
		}
		iv = describeInstallation(st, in)
		found = iv.Org == (org != "") && (org == "" || strings.EqualFold(org, in.Account))
	})
	if !found {
		return notFound("installation")
	}
	v.writePage(w, r, http.StatusOK, "installation", page{Title: iv.App.Name + " on " + iv.Account, Data: iv})
	return nil
}

// installApp is the install form (ServeForm has checked the request's origin, the
// session and its token): login installs the App on the account target_id names, on
// all its repositories or the chosen ones, and the browser goes to the App's setup
// URL (with installation_id, setup_action=install and the state the install page was
// given), as GitHub sends it, or else to the installation's settings page.
//
// Who may: on GitHub an organisation's owners install Apps on it, and a repository's
// admins on the repositories they administer. The emulator has no organisation
// owners, so on an organisation it asks for admin on every repository installed on
// (all of them, for "All repositories"); on a person's account, that person.
func (v *View) installApp(r *http.Request, login string) (string, error) {
	m := installPermsRE.FindStringSubmatch(r.URL.Path)
	f := r.PostForm
	if v.install == nil {
		return "", refuse(http.StatusNotFound, "This emulator installs no App from its pages.")
	}
	var target string
	var err error
	v.store.Do(func(st *state.World) {
		app := st.App()
		acct := installTarget(st, r.URL.Query().Get("target_id"))
		if !strings.EqualFold(app.Slug, m[1]) || acct == nil {
			err = refuse(http.StatusNotFound, "No such App, or it cannot be installed on that account (a private App installs only on its owner's).")
			return
		}
		if in := st.InstallationOn(acct.Login); in != nil {
			err = refuse(http.StatusUnprocessableEntity, app.Name+" is already installed on "+acct.Login+" (installation "+strconv.FormatInt(in.ID, 10)+").")
			return
		}
		var repos []string
		var covered []*state.Repo
		switch f.Get("repository_selection") {
		case "all":
			for _, rp := range st.Repos() {
				if strings.EqualFold(rp.Owner, acct.Login) {
					covered = append(covered, rp)
				}
			}
		case "selected":
			for _, name := range f["repository_ids"] {
				rp := st.Repo(acct.Login, name)
				if rp == nil {
					err = refuse(http.StatusUnprocessableEntity, "No repository "+acct.Login+"/"+name+".")
					return
				}
				if !slices.Contains(repos, rp.Name) {
					repos = append(repos, rp.Name)
					covered = append(covered, rp)
				}
			}
			if len(repos) == 0 {
				err = refuse(http.StatusUnprocessableEntity, "Choose at least one repository, or All repositories.")
				return
			}
		default:
			err = refuse(http.StatusUnprocessableEntity, "Choose All repositories or Only select repositories.")
			return
		}
		viewer := st.User(login)
		if acct.Type == "User" && !strings.EqualFold(acct.Login, login) {
			err = refuse(http.StatusForbidden, "Only "+acct.Login+" installs Apps on their account.")
			return
		}
		for _, rp := range covered {
			if rp.Role(viewer) != "admin" {
				err = refuse(http.StatusForbidden, "Installing "+app.Name+" on "+rp.FullName()+" needs admin access to it, which "+login+" does not have.")
				return
			}
		}
		in, ierr := v.install(st, acct.Login, repos)
		if ierr != nil {
			err = refuse(http.StatusUnprocessableEntity, ierr.Error())
			return
		}
		target = installationURL(st, in)
		if app.SetupURL != "" {
			u, perr := url.Parse(app.SetupURL)
			if perr == nil {
				q := u.Query()
				q.Set("installation_id", strconv.FormatInt(in.ID, 10))
				q.Set("setup_action", "install")
				if s := f.Get("state"); s != "" {
					q.Set("state", s)
				}
				u.RawQuery = q.Encode()
				target = u.String()
			}
		}
	})
	return target, err
}
