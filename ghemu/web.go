package ghemu

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
)

// The web view: GitHub's pages for what the emulator holds, read-only, at the paths its
// html_url fields name (BASE/{owner}/{repo}/pull/{n}, …/issues/{n}, …/runs/{id},
// …/actions/runs/{id}, …/commit/{sha}), so a link in an API object or a webhook
// payload opens in a browser. Pages are server-rendered with html/template (which
// escapes every value by context) and carry no JavaScript; Markdown goes through
// renderMarkdown, which keeps of raw HTML what GitHub's sanitizer keeps. There is no
// login: the emulator is a test and demo tool bound to loopback, so the view shows
// everything, private repositories included, and every page says so in its banner.

//go:embed web
var webFiles embed.FS

// webCSP forbids every script, so that even an escaping mistake could not run one, and
// anything loaded from elsewhere. Styles are inline (the one stylesheet, and label
// colours in style attributes).
const webCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// webTemplates holds one template set per page: the layout, the shared partials and the
// page's own "content".
var webTemplates = sync.OnceValue(func() map[string]*template.Template {
	css, err := fs.ReadFile(webFiles, "web/static/style.css")
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
	pages, err := fs.Glob(webFiles, "web/templates/page_*.html")
	if err != nil || len(pages) == 0 {
		panic(fmt.Errorf("failed to find the embedded page templates: %w", err))
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "web/templates/page_"), ".html")
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(webFiles, "web/templates/layout.html", "web/templates/partials.html", p))
	}
	return out
})

// restTops are the first path segments of the REST routes; webPath leaves those paths
// to the REST API.
var restTops = sync.OnceValue(func() map[string]bool {
	var e Emulator
	e.registerRoutes()
	tops := map[string]bool{}
	for _, r := range e.routes.routes {
		top, _, _ := strings.Cut(strings.TrimPrefix(r.template, "/"), "/")
		tops[top] = true
	}
	return tops
})

// isWebPath reports whether a GET of path is the web view's: anything but the REST
// API's paths (/repos/…, /app/…, /installation/…, …), the git smart-HTTP paths
// (/{owner}/{repo}.git/…), the OIDC issuer (/.well-known/…) and the control routes
// (/_emulator/…). GitHub's logins and repository names cannot collide with these: no
// account is called "repos" or "app", and a login never starts with "_" or ".".
func isWebPath(p string) bool {
	if isGitPath(p) || strings.HasPrefix(p, "/.well-known/") || strings.HasPrefix(p, controlPrefix) {
		return false
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return !restTops()[top]
}

// isWebRequest is isWebPath for the methods the read-only view answers.
func isWebRequest(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && isWebPath(r.URL.Path)
}

// webError is a page that could not be shown: its status and what to say.
type webError struct {
	status int
	msg    string
}

func (e *webError) Error() string { return e.msg }

func webNotFound(what string) error {
	return &webError{status: http.StatusNotFound, msg: what + " not found"}
}

// serveWeb answers one request of the web view.
func (e *Emulator) serveWeb(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) == 1 && seg[0] == "" {
		seg = nil
	}
	var err error
	switch {
	case len(seg) == 0:
		err = e.webIndex(w)
	case len(seg) == 1:
		err = e.webOwner(w, seg[0])
	case len(seg) == 2:
		err = e.webRepo(w, r, seg[0], seg[1])
	case len(seg) == 4 && seg[2] == "issues":
		err = e.webIssue(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "pull" && (strings.HasSuffix(seg[3], ".diff") || strings.HasSuffix(seg[3], ".patch")):
		err = e.webPullDiff(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "pull":
		err = e.webPull(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "runs":
		err = e.webCheckRun(w, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "commit":
		err = e.webCommit(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 5 && seg[2] == "actions" && seg[3] == "runs":
		err = e.webRun(w, seg[0], seg[1], seg[4], "")
	case len(seg) == 7 && seg[2] == "actions" && seg[3] == "runs" && seg[5] == "job":
		err = e.webRun(w, seg[0], seg[1], seg[4], seg[6])
	default:
		err = webNotFound("page")
	}
	if err == nil {
		return
	}
	status, msg := http.StatusInternalServerError, "The page could not be shown."
	var we *webError
	if errors.As(err, &we) {
		status, msg = we.status, we.msg
	} else {
		e.log.Error().Err(err).Str("path", r.URL.Path).Msg("web view failed")
	}
	e.writePage(w, status, "error", webPage{Title: http.StatusText(status), Data: msg})
}

// webPage is what every page template gets: its title, the repository it belongs to
// (for the header's breadcrumb and tabs), and the page's own data.
type webPage struct {
	Title string
	Owner string
	Repo  string
	// Private marks a private repository in the header.
	Private bool
	Data    any
}

// writePage renders a page completely before sending it, so a template error gives a
// 500 rather than half a page.
func (e *Emulator) writePage(w http.ResponseWriter, status int, name string, p webPage) {
	t := webTemplates()[name]
	var buf bytes.Buffer
	if t == nil {
		e.log.Error().Str("page", name).Msg("web view: no such template")
		http.Error(w, "no template", http.StatusInternalServerError)
		return
	}
	if err := t.Execute(&buf, p); err != nil {
		e.log.Error().Err(err).Str("page", name).Msg("web view: template failed")
		http.Error(w, "template failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (e *Emulator) isBotLocked(login string) bool {
	u := e.st.Users[key(login)]
	return (u != nil && u.Type == "Bot") || strings.HasSuffix(login, "[bot]")
}

// webNumber parses an issue or pull request number from the path.
func webNumber(s, what string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, webNotFound(what)
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
