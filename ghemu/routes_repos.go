package ghemu

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/bumperdev/bumper/ghemu/gitserver"
)

func pathEscape(s string) string { return url.PathEscape(s) }

func (e *Emulator) getRepo(w http.ResponseWriter, r *http.Request, c *call) {
	o := e.renderRepo(c.repo)
	if c.who != nil && c.who.user != nil && c.who.token == nil {
		o["permissions"] = rolePermissions(e.roleOf(c.who.user, c.repo))
	}
	writeJSON(w, http.StatusOK, o)
}

// resolveRef turns a branch name, full ref or commit SHA into a commit SHA.
func (e *Emulator) resolveRef(ctx context.Context, rp *repo, ref string) (string, bool) {
	refs, err := e.git.Refs(ctx, rp.Owner, rp.Name)
	if err != nil {
		return "", false
	}
	for _, cand := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if sha, ok := refs[cand]; ok {
			return sha, true
		}
	}
	if isSHA(ref) {
		if _, err := e.commit(ctx, rp, ref); err == nil {
			return ref, true
		}
	}
	return "", false
}

func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

func (e *Emulator) renderCommit(rp *repo, ci *gitserver.CommitInfo) obj {
	api := e.baseURL + "/repos/" + rp.fullName()
	parents := []obj{}
	for _, p := range ci.Parents {
		parents = append(parents, obj{"sha": p, "url": api + "/commits/" + p,
			"html_url": e.baseURL + "/" + rp.fullName() + "/commit/" + p})
	}
	person := func(s gitserver.Signature) obj {
		return obj{"name": s.Name, "email": s.Email, "date": ts(s.When)}
	}
	gitUser := func(s gitserver.Signature) any {
		for _, u := range e.st.Users {
			if u.Email != "" && strings.EqualFold(u.Email, s.Email) || strings.EqualFold(u.Login, s.Name) {
				return e.renderUser(u.Login)
			}
		}
		return nil
	}
	return obj{
		"sha": ci.SHA, "node_id": nodeID("C", int64(len(ci.SHA))), "url": api + "/commits/" + ci.SHA,
		"html_url":     e.baseURL + "/" + rp.fullName() + "/commit/" + ci.SHA,
		"comments_url": api + "/commits/" + ci.SHA + "/comments",
		"commit": obj{
			"url": api + "/git/commits/" + ci.SHA, "author": person(ci.Author),
			"committer": person(ci.Committer), "message": ci.Message, "comment_count": 0,
			"tree":         obj{"sha": ci.Tree, "url": api + "/git/trees/" + ci.Tree},
			"verification": obj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
		},
		"author": gitUser(ci.Author), "committer": gitUser(ci.Committer), "parents": parents,
	}
}

func (e *Emulator) getCommit(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := e.resolveRef(r.Context(), c.repo, c.params["ref"])
	if !ok {
		writeError(w, errUnprocessable("No commit found for SHA: "+c.params["ref"]))
		return
	}
	ci, err := e.commit(r.Context(), c.repo, sha)
	if err != nil {
		writeError(w, err)
		return
	}
	o := e.renderCommit(c.repo, ci)
	o["files"] = []obj{}
	o["stats"] = obj{"additions": 0, "deletions": 0, "total": 0}
	writeJSON(w, http.StatusOK, o)
}

func (e *Emulator) getBranch(w http.ResponseWriter, r *http.Request, c *call) {
	name := c.params["branch"]
	refs, err := e.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	sha, ok := refs["refs/heads/"+name]
	if !ok {
		writeError(w, newError(http.StatusNotFound, "Branch not found"))
		return
	}
	ci, err := e.commit(r.Context(), c.repo, sha)
	if err != nil {
		writeError(w, err)
		return
	}
	api := e.baseURL + "/repos/" + c.repo.fullName() + "/branches/" + name
	p := c.repo.Protected[name]
	contexts, checks := requiredStatusChecks(p)
	enforcement := "off"
	if p != nil {
		enforcement = "non_admins"
	}
	writeJSON(w, http.StatusOK, obj{
		"name": name, "commit": e.renderCommit(c.repo, ci),
		"_links":    obj{"html": e.baseURL + "/" + c.repo.fullName() + "/tree/" + name, "self": api},
		"protected": p != nil,
		"protection": obj{"enabled": p != nil, "required_status_checks": obj{
			"enforcement_level": enforcement, "contexts": contexts, "checks": checks}},
		"protection_url": api + "/protection",
	})
}

func (e *Emulator) getCollaboratorPermission(w http.ResponseWriter, r *http.Request, c *call) {
	u := e.st.Users[key(c.params["username"])]
	if u == nil {
		writeError(w, errNotFound())
		return
	}
	role := e.roleOf(u, c.repo)
	if role == "" && !c.repo.Private {
		role = "read"
	}
	if role == "" {
		writeError(w, newError(http.StatusNotFound, u.Login+" is not a user"))
		return
	}
	uo := e.renderUser(u.Login)
	uo["role_name"] = role
	uo["permissions"] = rolePermissions(role)
	writeJSON(w, http.StatusOK, obj{"permission": legacyPermission(role), "role_name": role, "user": uo})
}

// getContents serves one file. Directories are not emulated: Bumper only reads files
// (.github/bumper.yml), and a directory answers 404 with a message saying so.
func (e *Emulator) getContents(w http.ResponseWriter, r *http.Request, c *call) {
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = c.repo.DefaultBranch
	}
	sha, ok := e.resolveRef(r.Context(), c.repo, ref)
	if !ok {
		writeError(w, newError(http.StatusNotFound, "No commit found for the ref "+ref))
		return
	}
	p := strings.Trim(c.params["path"], "/")
	content, blob, err := e.git.ReadFile(r.Context(), c.repo.Owner, c.repo.Name, sha, p)
	if isNotFound(err) {
		writeError(w, errNotFound())
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	api := e.baseURL + "/repos/" + c.repo.fullName()
	self := api + "/contents/" + p + "?ref=" + url.QueryEscape(ref)
	html := e.baseURL + "/" + c.repo.fullName() + "/blob/" + ref + "/" + p
	gitURL := api + "/git/blobs/" + blob
	writeJSON(w, http.StatusOK, obj{
		"type": "file", "encoding": "base64", "size": len(content), "name": path.Base(p), "path": p,
		"content": wrap60(base64.StdEncoding.EncodeToString(content)), "sha": blob,
		"url": self, "git_url": gitURL, "html_url": html,
		"download_url": e.baseURL + "/_raw/" + c.repo.fullName() + "/" + ref + "/" + p,
		"_links":       obj{"self": self, "git": gitURL, "html": html},
	})
}

// wrap60 breaks base64 into lines of 60 characters, as GitHub's contents API does.
func wrap60(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60])
		b.WriteByte('\n')
		s = s[60:]
	}
	b.WriteString(s)
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// isNotFound reports whether a git server error means the file or object is not there
// (a malformed path is as absent as a missing one, as on GitHub).
func isNotFound(err error) bool {
	return errors.Is(err, gitserver.ErrFileNotFound) || errors.Is(err, gitserver.ErrNotAFile) ||
		errors.Is(err, gitserver.ErrInvalidName) || errors.Is(err, gitserver.ErrObjectNotFound)
}

// commit returns what git says of a commit (a SHA, or a ref for a commit not yet
// cached), from the cache when the SHA was seen before. Callers hold e.mu.
func (e *Emulator) commit(ctx context.Context, rp *repo, sha string) (*gitserver.CommitInfo, error) {
	k := key(rp.fullName()) + "@" + sha
	if ci, ok := e.commits[k]; ok {
		return ci, nil
	}
	ci, err := e.git.Commit(ctx, rp.Owner, rp.Name, sha)
	if err != nil {
		return nil, err
	}
	if isSHA(sha) {
		e.commits[k] = ci
	}
	return ci, nil
}
