// Package conversation is what people and Apps do on issues and pull requests that more
// than one surface of the emulator offers: comments, pull request reviews with inline
// comments (pending, then submitted), review threads, their replies and their
// resolution, merges and branch updates, and what a moved branch sets off (the push
// webhook, the pull requests that follow it, their mergeability). The REST routes and
// the web view's forms call it, so a review made in a browser is the review the API
// makes, with the same checks, records and webhooks.
//
// Concurrency: every operation runs inside the caller's state.Store.Do, with the world
// it was given; some run git (diffs, merges, mergeability, the commits a push brought)
// with the state lock held, as a REST request does, and the git server's ref locks
// inside it (the order state.doc gives).
package conversation

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/ghemu/webhook"
)

// obj is a rendered GitHub object.
type obj = render.Obj

// Service does the conversation's operations on a world, with git and the webhook
// sender behind it.
type Service struct {
	git     *gitserver.Server
	hooks   *webhook.Sender
	commits *render.Commits
	log     zerolog.Logger
}

// New is the conversation's operations over git, sending webhooks through hooks.
func New(git *gitserver.Server, hooks *webhook.Sender, commits *render.Commits, log zerolog.Logger) *Service {
	return &Service{git: git, hooks: hooks, commits: commits, log: log}
}

// Actor is who does something: a person with their own token (or signed in to the web
// view), the emulator's App through an installation token, or another App's bot user.
type Actor struct {
	// Login is the account GitHub names as having acted (the App's bot for an
	// installation token).
	Login string
	// ViaApp is set for an installation token: comments then carry
	// performed_via_github_app.
	ViaApp bool
	// App is the slug of the App the actor is, whose bypass of required reviews applies;
	// "" for a person.
	App string
	// Role is the actor's repository role (read … admin); "" for an installation token,
	// which is never an admin.
	Role string
}

// admin reports whether the actor acts with an admin's own credential.
func (a Actor) admin() bool { return !a.ViaApp && state.RoleAtLeast(a.Role, "admin") }

// mayWrite reports whether the actor may change what others wrote: the App (whose
// token the route already checked) or a person with write access.
func (a Actor) mayWrite() bool { return a.ViaApp || state.RoleAtLeast(a.Role, "write") }

// emit sends a webhook of what was done.
func (s *Service) emit(w *state.World, event, action string, rp *state.Repo, sender string, body obj) {
	s.hooks.Emit(w, event, action, rp, sender, body)
}

// renderer is a renderer for the current transaction.
func (s *Service) renderer(w *state.World) *render.Renderer { return render.New(w, s.commits) }

// Signature is the git identity GitHub gives a login's commits it makes (merges,
// branch updates): a seeded user's email, else GitHub's noreply address for the
// account, "<id>+<login>@users.noreply.<host>".
func Signature(w *state.World, login string) gitserver.Signature {
	email := login + "@users.noreply." + host(w)
	if u := w.User(login); u != nil {
		email = strconv.FormatInt(u.ID, 10) + "+" + u.Login + "@users.noreply." + host(w)
		if u.Email != "" {
			email = u.Email
		}
	}
	return gitserver.Signature{Name: login, Email: email, When: w.Timestamp()}
}

// webFlow is the committer of the commits GitHub's web flow makes for people (merges,
// branch updates): GitHub itself.
func webFlow(w *state.World) gitserver.Signature {
	return gitserver.Signature{Name: "GitHub", Email: "noreply@" + host(w), When: w.Timestamp()}
}

// host is the emulator's host name, which stands for github.com in addresses.
func host(w *state.World) string {
	u, err := url.Parse(w.BaseURL())
	if err != nil || u.Hostname() == "" {
		return "github.com"
	}
	return strings.Trim(u.Hostname(), "[]")
}
