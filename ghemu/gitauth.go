package ghemu

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/pktline"
)

// authorizeGit applies GitHub's rules to smart-HTTP git: an installation token needs
// contents read to fetch and contents write to push, and must cover the repository; a
// user needs read or write access. Anonymous access works only on public repositories,
// for fetching.
func (e *Emulator) authorizeGit(r *http.Request, owner, name string, access gitserver.Access) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, name)
	who, err := e.authenticate(r)
	if err != nil {
		return &gitserver.AuthError{Status: http.StatusUnauthorized, Message: "Invalid username or token. Password authentication is not supported for Git operations."}
	}
	if rp == nil {
		if who == nil {
			return &gitserver.AuthError{Status: http.StatusUnauthorized, Message: "Authentication required"}
		}
		return &gitserver.AuthError{Status: http.StatusNotFound, Message: "Repository not found."}
	}
	n := need{auth: authRepo, perm: "contents", level: "read", userLevel: "read"}
	if access == gitserver.Write {
		// authorize refuses anonymous writes with a 401, even on public repositories.
		n.level, n.userLevel = "write", "write"
	}
	if err := e.authorize(who, n, rp); err != nil {
		var ae *apiError
		errors.As(err, &ae)
		status := http.StatusForbidden
		msg := "Permission to " + rp.fullName() + ".git denied."
		if ae != nil && ae.Status == http.StatusUnauthorized {
			status, msg = http.StatusUnauthorized, "Authentication required"
		}
		if ae != nil && ae.Status == http.StatusNotFound {
			status, msg = http.StatusNotFound, "Repository not found."
		}
		return &gitserver.AuthError{Status: status, Message: msg}
	}
	return nil
}

// checkPush refuses updates to protected branches, as GitHub's GH006 hook does.
func (e *Emulator) checkPush(r *http.Request, owner, name string, updates []pktline.RefUpdate) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, name)
	if rp == nil {
		return &gitserver.AuthError{Status: http.StatusNotFound, Message: "Repository not found."}
	}
	who, _ := e.authenticate(r)
	for _, u := range updates {
		if e.refIsProtected(who, rp, u.Ref) {
			return fmt.Errorf("GH006: Protected branch update failed for %s. Changes must be made through a pull request", u.Ref)
		}
	}
	return nil
}

// WorkflowsDir is where GitHub keeps workflows; an installation token needs
// `workflows: write` to push commits that touch a file below it.
const WorkflowsDir = ".github/workflows"

// workflowRefusal is GitHub's reason for refusing a GitHub App's push that touches a
// workflow without the workflows permission.
func workflowRefusal(path string) error {
	return fmt.Errorf("refusing to allow a GitHub App to create or update workflow `%s` without `workflows` permission", path)
}

// guardPaths guards .github/workflows/ against an installation token without
// `workflows: write`, as GitHub does. Users' tokens are not restricted (GitHub asks a
// classic token for the `workflow` scope, which the emulator does not model).
func (e *Emulator) guardPaths(r *http.Request, _, _ string, _ []pktline.RefUpdate) *gitserver.PathGuard {
	e.mu.Lock()
	defer e.mu.Unlock()
	who, err := e.authenticate(r)
	if err != nil || who == nil || who.token == nil || levelAtLeast(who.token.Permissions["workflows"], "write") {
		return nil
	}
	return &gitserver.PathGuard{Dirs: []string{WorkflowsDir}, Refuse: workflowRefusal}
}

// pushed moves pull requests whose branches moved, with their webhooks.
func (e *Emulator) pushed(r *http.Request, owner, name string, updates []pktline.RefUpdate) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, name)
	if rp == nil {
		return
	}
	actor := rp.Owner
	if who, err := e.authenticate(r); err == nil && who != nil {
		actor = who.actor()
	}
	for _, u := range updates {
		if u.IsDelete() {
			continue
		}
		e.branchMoved(rp, u.Ref, u.New, actor)
	}
	e.saveLocked()
}

// signature is the git identity of a login, for commits the emulator makes.
func (e *Emulator) signature(login string) gitserver.Signature {
	email := login + "@users.noreply.example.test"
	if u := e.st.Users[key(login)]; u != nil && u.Email != "" {
		email = u.Email
	}
	return gitserver.Signature{Name: login, Email: email, When: e.timestamp()}
}
