package rest

import (
	"fmt"
	"net/http"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/internal/pktline"
)

// GitRules applies GitHub's rules to git over smart HTTP, for the git server's
// callbacks: who may fetch and push, protected branches, workflow files, and pull
// requests that follow a pushed branch. Each callback is one transaction of the store;
// the git server calls them without holding it, and runs git outside them.
type GitRules struct {
	store *state.Store
	conv  *conversation.Service
}

// NewGitRules applies the rules of store's world; what a push moved follows through
// conv (the push webhook, the pull requests, their mergeability).
func NewGitRules(store *state.Store, conv *conversation.Service) *GitRules {
	return &GitRules{store: store, conv: conv}
}

// Authorize is gitserver.Options.Authorize: an installation token needs contents read
// to fetch and contents write to push, and must cover the repository; a user needs read
// or write access. Anonymous access works only on public repositories, for fetching.
func (g *GitRules) Authorize(r *http.Request, owner, name string, access gitserver.Access) error {
	var out error
	g.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		who, err := authenticate(st, r)
		if err != nil {
			out = &gitserver.AuthError{Status: http.StatusUnauthorized, Message: "Invalid username or token. Password authentication is not supported for Git operations."}
			return
		}
		if rp == nil {
			if who == nil {
				out = &gitserver.AuthError{Status: http.StatusUnauthorized, Message: "Authentication required"}
				return
			}
			out = &gitserver.AuthError{Status: http.StatusNotFound, Message: "Repository not found."}
			return
		}
		n := need{auth: authRepo, perm: "contents", level: "read", userLevel: "read"}
		if access == gitserver.Write {
			// authorize refuses anonymous writes with a 401, even on public repositories.
			n.level, n.userLevel = "write", "write"
		}
		if err := authorize(st, who, n, rp); err != nil {
			status, msg := http.StatusForbidden, "Permission to "+rp.FullName()+".git denied."
			switch apierr.StatusOf(err) {
			case http.StatusUnauthorized:
				status, msg = http.StatusUnauthorized, "Authentication required"
			case http.StatusNotFound:
				status, msg = http.StatusNotFound, "Repository not found."
			}
			out = &gitserver.AuthError{Status: status, Message: msg}
		}
	})
	return out
}

// CheckPush is gitserver.Options.CheckPush: it refuses updates to protected branches,
// as GitHub's GH006 hook does.
func (g *GitRules) CheckPush(r *http.Request, owner, name string, updates []pktline.RefUpdate) error {
	var out error
	g.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		if rp == nil {
			out = &gitserver.AuthError{Status: http.StatusNotFound, Message: "Repository not found."}
			return
		}
		who, _ := authenticate(st, r)
		for _, u := range updates {
			if !u.IsDelete() && unsignedMove(who, rp, u.Ref, u.New) {
				out = fmt.Errorf("GH006: Protected branch update failed for %s. Commits must have verified signatures", u.Ref)
				return
			}
			if refIsProtected(who, rp, u.Ref) {
				out = fmt.Errorf("GH006: Protected branch update failed for %s. Changes must be made through a pull request", u.Ref)
				return
			}
		}
	})
	return out
}

// WorkflowsDir is where GitHub keeps workflows; an installation token needs
// `workflows: write` to push commits that touch a file below it.
const WorkflowsDir = ".github/workflows"

// workflowRefusal is GitHub's reason for refusing a GitHub App's push that touches a
// workflow without the workflows permission.
func workflowRefusal(path string) error {
	return fmt.Errorf("refusing to allow a GitHub App to create or update workflow `%s` without `workflows` permission", path)
}

// GuardPaths is gitserver.Options.GuardPaths: it guards .github/workflows/ against an
// installation token without `workflows: write`, as GitHub does. Users' tokens are not
// restricted (GitHub asks a classic token for the `workflow` scope, which the emulator
// does not model).
func (g *GitRules) GuardPaths(r *http.Request, _, _ string, _ []pktline.RefUpdate) *gitserver.PathGuard {
	var out *gitserver.PathGuard
	g.store.Do(func(st *state.World) {
		who, err := authenticate(st, r)
		if err != nil || who == nil || who.token == nil || state.LevelAtLeast(who.token.Permissions["workflows"], "write") {
			return
		}
		out = &gitserver.PathGuard{Dirs: []string{WorkflowsDir}, Refuse: workflowRefusal}
	})
	return out
}

// Pushed is gitserver.Options.Pushed: each ref the push moved sends its push webhook,
// and pull requests whose branches moved follow (conversation.RefMoved).
func (g *GitRules) Pushed(r *http.Request, owner, name string, updates []pktline.RefUpdate) {
	g.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		if rp == nil {
			return
		}
		actor := rp.Owner
		if who, err := authenticate(st, r); err == nil && who != nil {
			actor = who.actor()
		}
		for _, u := range updates {
			before, after := u.Old, u.New
			if u.IsCreate() {
				before = ""
			}
			if u.IsDelete() {
				after = ""
			}
			g.conv.RefMoved(r.Context(), st, rp, u.Ref, before, after, actor)
		}
		st.MarkChanged()
	})
}

// refIsProtected reports whether branch protection refuses who a direct update of ref.
// GitHub applies it alike to pushes and to API ref updates: only an admin's own
// credential passes, and only while the protection does not enforce admins.
// unsignedMove reports whether moving ref to sha moves a branch that requires signed commits to a
// commit the emulator did not sign. A push brings new commits, which the emulator
// never verifies (it knows no one's keys): only a ref moved to a commit made through
// the Git Data API with an installation token passes. Admins are held to it only
// when the protection enforces admins, as on GitHub.
func unsignedMove(who *principal, rp *state.Repo, ref, sha string) bool {
	branch, ok := cutBranch(ref)
	prot := rp.Protection(branch)
	if !ok || prot == nil || !prot.RequiredSignatures {
		return false
	}
	if isAdmin(who, rp) && !prot.EnforceAdmins {
		return false
	}
	return !rp.Verification(sha).Verified
}

func refIsProtected(who *principal, rp *state.Repo, ref string) bool {
	branch, ok := cutBranch(ref)
	if !ok || rp.Protection(branch) == nil {
		return false
	}
	return !isAdmin(who, rp) || rp.Protection(branch).EnforceAdmins
}
