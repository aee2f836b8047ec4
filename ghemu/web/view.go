// Package web is the emulator's web view: GitHub's pages for what the emulator holds,
// at the paths its html_url fields name (BASE/{owner}/{repo}/pull/{n}, …/issues/{n},
// …/runs/{id}, …/actions/runs/{id}, …/commit/{sha}), so a link in an API object or a
// webhook payload opens in a browser; forms on them for the emulator's local users
// (forms.go: comment, review with inline comments, reply, resolve, merge), from this
// machine only (session.go); and the pages of GitHub's App manifest flow. Pages are
// server-rendered with html/template (which escapes every value by context) and carry
// no JavaScript; Markdown goes through renderMarkdown, which keeps of raw HTML what
// GitHub's sanitizer keeps. Reading needs no login: the emulator is a test and demo
// tool bound to loopback, so the view shows everything, private repositories included,
// and every page says so in its banner.
//
// Concurrency: a page copies what it shows out of the world inside one
// state.Store.Do, through the world's methods, into view models; git runs (diffs,
// commits) and the page is written after the lock is let go, so a slow browser never
// holds up the API. A form makes its change in one Do, through package conversation,
// as a REST request does. The sessions' lock is a leaf, never held across a Do.
package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

//go:embed templates static
var files embed.FS

// csp forbids every script, so that even an escaping mistake could not run one, and
// anything loaded from elsewhere. Styles are inline (the one stylesheet, and label
// colours in style attributes). Forms post only to the emulator itself.
const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// setPageHeaders sets what every page and form answer carries: the CSP, no sniffing,
// no caching, and a referrer policy under which the browser names this origin on a
// form post to it (its Origin header, which the forms check) and nothing to others.
func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// templates holds one template set per page: the layout, the shared partials and the
// page's own "content".
var templates = sync.OnceValue(func() map[string]*template.Template {
	css, err := fs.ReadFile(files, "static/style.css")
	if err != nil {
		panic(fmt.Errorf("failed to read the embedded stylesheet: %w", err))
	}
	funcs := template.FuncMap{
		"css":       func() template.CSS { return template.CSS(css) }, //nolint:gosec // our own embedded file
		"when":      func(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04 UTC") },
		"short":     shortSHA,
		"plural":    plural,
		"deref":     deref,
		"checkTone": checkTone,
		"reviewTone": func(state string) string {
			switch state {
			case "APPROVED":
				return "success"
			case "CHANGES_REQUESTED":
				return "failure"
			}
			return "neutral"
		},
		"reviewVerb": func(state string) string {
			switch state {
			case "APPROVED":
				return "approved these changes"
			case "CHANGES_REQUESTED":
				return "requested changes"
			case "DISMISSED":
				return "reviewed (dismissed)"
			case "PENDING":
				return "started a review"
			}
			return "reviewed"
		},
	}
	pages, err := fs.Glob(files, "templates/page_*.html")
	if err != nil || len(pages) == 0 {
		panic(fmt.Errorf("failed to find the embedded page templates: %w", err))
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/page_"), ".html")
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(files, "templates/layout.html", "templates/partials.html", p))
	}
	return out
})

// View serves the pages and their forms.
type View struct {
	store *state.Store
	git   *gitserver.Server
	conv  *conversation.Service
	log   zerolog.Logger
	// sessions are the browsers signed in as local users (or about to sign in).
	sessions *sessions
	// install installs the App (SetInstaller): the install form's.
	install Installer
}

// New is the web view of store's world, with diffs and commits from git; its forms act
// through conv, as the REST API does.
func New(store *state.Store, git *gitserver.Server, conv *conversation.Service, log zerolog.Logger) *View {
	return &View{store: store, git: git, conv: conv, log: log, sessions: newSessions()}
}

// pageError is a page that could not be shown: its status and what to say.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func notFound(what string) error {
	return &pageError{status: http.StatusNotFound, msg: what + " not found"}
}

// ServeHTTP answers one GET or HEAD of the web view; the caller routes only those here.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w)
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) == 1 && seg[0] == "" {
		seg = nil
	}
	handled, err := v.serveAppPages(w, r)
	switch {
	case handled:
	case len(seg) == 0:
		err = v.index(w, r)
	case len(seg) == 1 && "/"+seg[0] == loginPath:
		v.login(w, r)
		return
	case len(seg) == 1:
		err = v.owner(w, r, seg[0])
	case len(seg) == 2:
		err = v.repo(w, r, seg[0], seg[1])
	case len(seg) == 4 && seg[2] == "issues":
		err = v.issue(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "pull" && (strings.HasSuffix(seg[3], ".diff") || strings.HasSuffix(seg[3], ".patch")):
		err = v.pullDiff(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "pull":
		err = v.pull(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "runs":
		err = v.checkRun(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "commit":
		err = v.commit(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 5 && seg[2] == "actions" && seg[3] == "runs":
		err = v.run(w, r, seg[0], seg[1], seg[4], "")
	case len(seg) == 7 && seg[2] == "actions" && seg[3] == "runs" && seg[5] == "job":
		err = v.run(w, r, seg[0], seg[1], seg[4], seg[6])
	default:
		err = notFound("page")
	}
	if err == nil {
		return
	}
	status, msg := http.StatusInternalServerError, "The page could not be shown."
	var pe *pageError
	if errors.As(err, &pe) {
		status, msg = pe.status, pe.msg
	} else {
		v.log.Error().Err(err).Str("path", r.URL.Path).Msg("web view failed")
	}
	v.writePage(w, r, status, "error", page{Title: http.StatusText(status), Data: msg})
}

// page is what every page template gets: its title, the repository it belongs to
// (for the header's breadcrumb and tabs), and the page's own data.
type page struct {
	Title string
	Owner string
	Repo  string
	// Private marks a private repository in the header.
	Private bool
	Data    any
	// Viewer is the local user signed in, "" for none; CSRF the token their forms carry.
	Viewer, CSRF string
	// Here is the page's path, where signing in comes back to.
	Here string
	// Back is where an error page leads back to ("" the index).
	Back string
}

// writePage renders a page completely before sending it, so a template error gives a
// 500 rather than half a page.
func (v *View) writePage(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if ss, ok := v.sessionOf(r); ok && ss.login != "" {
		p.Viewer, p.CSRF = ss.login, ss.csrf
	}
	p.Here = r.URL.Path
	t := templates()[name]
	var buf bytes.Buffer
	if t == nil {
		v.log.Error().Str("page", name).Msg("web view: no such template")
		http.Error(w, "no template", http.StatusInternalServerError)
		return
	}
	if err := t.Execute(&buf, p); err != nil {
		v.log.Error().Err(err).Str("page", name).Msg("web view: template failed")
		http.Error(w, "template failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// isBot reports whether login is a bot's: an App's bot user, or any "[bot]" login.
func isBot(st *state.World, login string) bool {
	u := st.User(login)
	return (u != nil && u.Type == "Bot") || strings.HasSuffix(login, "[bot]")
}

// number parses an issue or pull request number from the path.
func number(s, what string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, notFound(what)
	}
	return n, nil
}

// ---- small helpers for the templates ----

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// deref reads the optional values (completion times, exit codes) templates show once
// they checked them.
func deref(v any) any {
	switch p := v.(type) {
	case *time.Time:
		return *p
	case *int:
		return *p
	}
	return v
}

// checkTone is the badge colour of a check run's conclusion (or status).
func checkTone(status, conclusion string) string {
	if status != "completed" {
		return "pending"
	}
	switch conclusion {
	case "success":
		return "success"
	case "failure", "timed_out", "action_required", "startup_failure":
		return "failure"
	}
	return "neutral"
}
