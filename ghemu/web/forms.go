package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/state"
)

// The web view's forms: what a local user does on an issue or a pull request in a
// browser, through package conversation as the REST API does it, so a comment, a
// review or a merge made here is the one the API would make, with its webhooks. Every
// form is a plain HTML POST (the pages run no script), answered by a redirect back to
// the page (303) or by a page saying what was refused.

// maxFormBody bounds a form post; a comment is at most 65536 characters.
const maxFormBody = 1 << 20

// formRE matches the paths the forms post to, below an issue or a pull request:
// /{owner}/{repo}/issues/{n}/comments, /{owner}/{repo}/pull/{n}/{action} and
// /{owner}/{repo}/pull/{n}/threads/{id}/{replies|resolution}.
var formRE = regexp.MustCompile(`^/([^/]+)/([^/]+)/(issues|pull)/(\d+)/(comments|review-comments|reviews|merge|update-branch|threads/(\d+)/(replies|resolution))$`)

// Sign-in paths, GitHub's own: the form at /login posts to /session; /logout signs out.
const (
	loginPath   = "/login"
	sessionPath = "/session"
	logoutPath  = "/logout"
)

// IsFormPath reports whether a POST to path is one of the web view's forms. The caller
// routes only paths that are not the REST API's to the web view.
func IsFormPath(path string) bool {
	return path == sessionPath || path == logoutPath || formRE.MatchString(path) || isInstallForm(path)
}

// refusal is a form the view did not act on: its status and what to say.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string { return e.msg }

func refuse(status int, msg string) error { return &refusal{status: status, msg: msg} }

// ServeForm answers a POST to one of the forms (IsFormPath): only from this machine,
// from a page of the emulator, with the session's CSRF token, as a signed-in local
// user.
func (v *View) ServeForm(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w)
	if why, err := checkLocal(r); err != nil {
		v.refusePage(w, r, http.StatusForbidden, why, "")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	if err := r.ParseForm(); err != nil {
		v.refusePage(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error(), "")
		return
	}
	ss, ok := v.sessionOf(r)
	if !ok || !csrfMatches(ss, r.PostForm.Get("csrf")) {
		v.refusePage(w, r, http.StatusForbidden, "The form's token is missing or does not match your session: "+
			"reload the page and send it again (a form sent from another site is refused this way).", loginPath)
		return
	}
	switch r.URL.Path {
	case sessionPath:
		v.signIn(w, r, ss)
		return
	case logoutPath:
		v.sessions.end(ss.id)
		clearSessionCookie(w)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if ss.login == "" {
		v.refusePage(w, r, http.StatusForbidden, "Sign in as one of the emulator's users first.", loginPath)
		return
	}
	if isInstallForm(r.URL.Path) {
		v.serveInstallForm(w, r, ss.login)
		return
	}
	m := formRE.FindStringSubmatch(r.URL.Path)
	back := "/" + m[1] + "/" + m[2] + "/" + m[3] + "/" + m[4]
	target, err := v.act(r, ss.login, m)
	if err != nil {
		status, msg := http.StatusInternalServerError, "The form could not be done."
		var rf *refusal
		var ae *apierr.Error
		switch {
		case errors.As(err, &rf):
			status, msg = rf.status, rf.msg
		case errors.As(err, &ae):
			status, msg = ae.Status, apiMessage(ae)
		default:
			v.log.Error().Err(err).Str("path", r.URL.Path).Msg("web view form failed")
		}
		v.refusePage(w, r, status, msg, back)
		return
	}
	http.Redirect(w, r, back+target, http.StatusSeeOther)
}

// serveInstallForm answers the install form: to the App's setup URL or the
// installation's page (303), or a page saying what was refused.
func (v *View) serveInstallForm(w http.ResponseWriter, r *http.Request, login string) {
	target, err := v.installApp(r, login)
	if err != nil {
		status, msg := http.StatusInternalServerError, "The App could not be installed."
		var rf *refusal
		if errors.As(err, &rf) {
			status, msg = rf.status, rf.msg
		} else {
			v.log.Error().Err(err).Str("path", r.URL.Path).Msg("web view install failed")
		}
		v.refusePage(w, r, status, msg, r.URL.RequestURI())
		return
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// apiMessage is what a refusal of the API says, its details included.
func apiMessage(e *apierr.Error) string {
	parts := []string{e.Message}
	for _, d := range e.Errors {
		switch d := d.(type) {
		case string:
			parts = append(parts, d)
		case apierr.Detail:
			parts = append(parts, strings.TrimSpace(d.Field+" "+d.Message))
		}
	}
	return strings.Join(parts, ": ")
}

// refusePage answers with a page saying why nothing was done, and a way back.
func (v *View) refusePage(w http.ResponseWriter, r *http.Request, status int, msg, back string) {
	v.writePage(w, r, status, "error", page{Title: http.StatusText(status), Data: msg, Back: back})
}

// need is the repository role each form asks of its user, as the REST route it
// stands for does: readers may comment and review (GitHub lets them), merging and
// updating a branch need write; resolving a thread needs write or the pull request's
// authorship (checked by the operation).
var need = map[string]string{"comments": "read", "review-comments": "read", "reviews": "read",
	"replies": "read", "resolution": "read", "merge": "write", "update-branch": "write"}

// act does what the form at m asks, as login, in one transaction; it returns the
// anchor of what it made, for the redirect.
func (v *View) act(r *http.Request, login string, m []string) (string, error) {
	owner, name, kind, num, action := m[1], m[2], m[3], m[4], m[5]
	if m[7] != "" {
		action = m[7]
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return "", refuse(http.StatusNotFound, "No such number.")
	}
	f := r.PostForm
	var target string
	v.store.Do(func(st *state.World) {
		u := st.User(login)
		rp := st.Repo(owner, name)
		if u == nil || u.Type != "User" {
			err = refuse(http.StatusForbidden, "The session's user is gone: sign in again.")
			return
		}
		if rp == nil || rp.Issue(n) == nil || (kind == "pull") != (rp.Pull(n) != nil) {
			err = refuse(http.StatusNotFound, "Not found.")
			return
		}
		role := rp.Role(u)
		if role == "" && rp.Private {
			err = refuse(http.StatusNotFound, "Not found.")
			return
		}
		if kind == "issues" && action != "comments" {
			err = refuse(http.StatusNotFound, "Not found.")
			return
		}
		if !state.RoleAtLeast(roleOrRead(role), need[action]) {
			err = refuse(http.StatusForbidden, login+" needs "+need[action]+" access to "+rp.FullName()+" for this.")
			return
		}
		who := conversation.Actor{Login: u.Login, Role: role}
		is, p := rp.Issue(n), rp.Pull(n)
		target, err = v.do(r, st, rp, is, p, who, action, m[6], f)
	})
	return target, err
}

// roleOrRead is a person's role, read on a public repository they have none on.
func roleOrRead(role string) string {
	if role == "" {
		return "read"
	}
	return role
}

// do is one form's operation, inside the transaction.
func (v *View) do(r *http.Request, st *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who conversation.Actor,
	action, thread string, f url.Values) (string, error) {
	ctx := r.Context()
	switch action {
	case "comments":
		cm, err := v.conv.Comment(st, rp, is, who, f.Get("body"))
		if err != nil {
			return "", err
		}
		return "#issuecomment-" + strconv.FormatInt(cm.ID, 10), nil
	case "review-comments":
		line, err := strconv.Atoi(f.Get("line"))
		if err != nil {
			return "", refuse(http.StatusUnprocessableEntity, "The comment names no line.")
		}
		rc, err := v.conv.AddPendingComment(ctx, st, rp, is, p, who, conversation.CommentSpec{
			Path: f.Get("path"), Side: f.Get("side"), Line: &line, Body: f.Get("body")})
		if err != nil {
			return "", err
		}
		return "#pending-" + strconv.FormatInt(rc.ID, 10), nil
	case "reviews":
		event, body := f.Get("event"), f.Get("body")
		if event == "" {
			return "", refuse(http.StatusUnprocessableEntity, "Choose Comment, Approve or Request changes.")
		}
		if rv := rp.PendingReview(p.Number, who.Login); rv != nil {
			if err := v.conv.SubmitReview(st, rp, is, p, rv, who, event, body); err != nil {
				return "", err
			}
			return "#pullrequestreview-" + strconv.FormatInt(rv.ID, 10), nil
		}
		rv, err := v.conv.CreateReview(ctx, st, rp, is, p, who, conversation.ReviewRequest{Event: event, Body: body})
		if err != nil {
			return "", err
		}
		return "#pullrequestreview-" + strconv.FormatInt(rv.ID, 10), nil
	case "replies", "resolution":
		id, _ := strconv.ParseInt(thread, 10, 64)
		to := rp.ReviewComment(id)
		if to == nil || to.PullNumber != p.Number {
			return "", refuse(http.StatusNotFound, "No such conversation.")
		}
		if action == "resolution" {
			return "#discussion_r" + thread, v.conv.ResolveThread(st, rp, is, p, to.Root(), who, f.Get("resolved") == "true")
		}
		rc, err := v.conv.Reply(st, rp, is, p, to, who, f.Get("body"))
		if err != nil {
			return "", err
		}
		return "#discussion_r" + strconv.FormatInt(rc.ID, 10), nil
	case "merge":
		_, err := v.conv.Merge(ctx, st, rp, is, p, who, conversation.MergeRequest{SHA: f.Get("sha")})
		return "#merge", err
	case "update-branch":
		_, err := v.conv.UpdateBranch(ctx, st, rp, is, p, who, f.Get("sha"))
		return "#merge", err
	}
	return "", fmt.Errorf("no form %q", action)
}

// signIn is POST /session {login, token}: the session becomes login's when the token is
// that local user's personal token, under a new ID (so one fixed before the sign-in
// cannot be ridden). The browser goes back where it came from.
func (v *View) signIn(w http.ResponseWriter, r *http.Request, ss session) {
	login, token := r.PostForm.Get("login"), r.PostForm.Get("token")
	ok := false
	v.store.Do(func(st *state.World) {
		u := st.User(login)
		ok = u != nil && u.Type == "User" && u.Token != "" && tokensMatch(u.Token, token)
		if ok {
			login = u.Login
		}
	})
	if !ok {
		v.refusePage(w, r, http.StatusForbidden, "That is not a local user and their token: sign in with a login and the token "+
			"the emulator printed for it.", loginPath)
		return
	}
	v.sessions.end(ss.id)
	setSessionCookie(w, v.sessions.start(login))
	http.Redirect(w, r, localPath(r.PostForm.Get("return")), http.StatusSeeOther)
}

// localPath is where to send the browser after signing in: a path of this emulator,
// "/" for anything else (another site, a scheme-relative "//host").
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return "/"
	}
	if u, err := url.Parse(p); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return p
}
