package rest

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

func (a *API) getRepo(w http.ResponseWriter, r *http.Request, c *call) {
	o := c.rn.Repo(c.repo)
	if c.who != nil && c.who.user != nil && c.who.token == nil {
		o["permissions"] = rolePermissions(c.repo.Role(c.who.user))
	}
	apierr.WriteJSON(w, http.StatusOK, o)
}

// resolveRef turns a branch name, full ref or commit SHA into a commit SHA.
func (a *API) resolveRef(ctx context.Context, rp *state.Repo, ref string) (string, bool) {
	refs, err := a.git.Refs(ctx, rp.Owner, rp.Name)
	if err != nil {
		return "", false
	}
	for _, cand := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if sha, ok := refs[cand]; ok {
			return sha, true
		}
	}
	if render.IsSHA(ref) {
		if _, err := a.commits.Get(ctx, rp, ref); err == nil {
			return ref, true
		}
	}
	return "", false
}

// commitExists reports whether sha is a full SHA of a commit of rp.
func (a *API) commitExists(ctx context.Context, rp *state.Repo, sha string) bool {
	_, err := a.commits.Get(ctx, rp, sha)
	return err == nil && render.IsSHA(sha)
}

func renderCommit(c *call, rp *state.Repo, ci *gitserver.CommitInfo) obj {
	base := c.st.BaseURL()
	api := base + "/repos/" + rp.FullName()
	parents := []obj{}
	for _, p := range ci.Parents {
		parents = append(parents, obj{"sha": p, "url": api + "/commits/" + p,
			"html_url": base + "/" + rp.FullName() + "/commit/" + p})
	}
	person := func(s gitserver.Signature) obj {
		return obj{"name": s.Name, "email": s.Email, "date": render.TS(s.When)}
	}
	gitUser := func(s gitserver.Signature) any {
		for _, u := range c.st.Users() {
			if u.Email != "" && strings.EqualFold(u.Email, s.Email) || strings.EqualFold(u.Login, s.Name) {
				return c.rn.User(u.Login)
			}
		}
		return nil
	}
	return obj{
		"sha": ci.SHA, "node_id": render.NodeID("C", int64(len(ci.SHA))), "url": api + "/commits/" + ci.SHA,
		"html_url":     base + "/" + rp.FullName() + "/commit/" + ci.SHA,
		"comments_url": api + "/commits/" + ci.SHA + "/comments",
		"commit": obj{
			"url": api + "/git/commits/" + ci.SHA, "author": person(ci.Author),
			"committer": person(ci.Committer), "message": ci.Message, "comment_count": 0,
			"tree":         obj{"sha": ci.Tree, "url": api + "/git/trees/" + ci.Tree},
			"verification": renderVerification(rp.Verification(ci.SHA)),
		},
		"author": gitUser(ci.Author), "committer": gitUser(ci.Committer), "parents": parents,
	}
}

func (a *API) getCommit(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := a.resolveRef(r.Context(), c.repo, c.params["ref"])
	if !ok {
		apierr.Write(w, apierr.Unprocessable("No commit found for SHA: "+c.params["ref"]))
		return
	}
	ci, err := a.commits.Get(r.Context(), c.repo, sha)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	o := renderCommit(c, c.repo, ci)
	o["files"] = []obj{}
	o["stats"] = obj{"additions": 0, "deletions": 0, "total": 0}
	apierr.WriteJSON(w, http.StatusOK, o)
}

func (a *API) getBranch(w http.ResponseWriter, r *http.Request, c *call) {
	name := c.params["branch"]
	refs, err := a.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	sha, ok := refs["refs/heads/"+name]
	if !ok {
		apierr.Write(w, apierr.New(http.StatusNotFound, "Branch not found"))
		return
	}
	ci, err := a.commits.Get(r.Context(), c.repo, sha)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	base := c.st.BaseURL()
	api := base + "/repos/" + c.repo.FullName() + "/branches/" + name
	p := c.repo.Protection(name)
	contexts, checks := requiredStatusChecks(p)
	enforcement := "off"
	if p != nil {
		enforcement = "non_admins"
	}
	apierr.WriteJSON(w, http.StatusOK, obj{
		"name": name, "commit": renderCommit(c, c.repo, ci),
		"_links":    obj{"html": base + "/" + c.repo.FullName() + "/tree/" + name, "self": api},
		"protected": p != nil,
		"protection": obj{"enabled": p != nil, "required_status_checks": obj{
			"enforcement_level": enforcement, "contexts": contexts, "checks": checks}},
		"protection_url": api + "/protection",
	})
}

func (a *API) getCollaboratorPermission(w http.ResponseWriter, r *http.Request, c *call) {
	u := c.st.User(c.params["username"])
	if u == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	role := c.repo.Role(u)
	if role == "" && !c.repo.Private {
		role = "read"
	}
	if role == "" {
		apierr.Write(w, apierr.New(http.StatusNotFound, u.Login+" is not a user"))
		return
	}
	uo := c.rn.User(u.Login)
	uo["role_name"] = role
	uo["permissions"] = rolePermissions(role)
	apierr.WriteJSON(w, http.StatusOK, obj{"permission": legacyPermission(role), "role_name": role, "user": uo})
}

// getContents serves one file. Directories are not emulated: Bumper only reads files
// (.github/bumper.yml), and a directory answers 404 with a message saying so.
func (a *API) getContents(w http.ResponseWriter, r *http.Request, c *call) {
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = c.repo.DefaultBranch
	}
	sha, ok := a.resolveRef(r.Context(), c.repo, ref)
	if !ok {
		apierr.Write(w, apierr.New(http.StatusNotFound, "No commit found for the ref "+ref))
		return
	}
	p := strings.Trim(c.params["path"], "/")
	content, blob, err := a.git.ReadFile(r.Context(), c.repo.Owner, c.repo.Name, sha, p)
	if isNotFound(err) {
		apierr.Write(w, apierr.NotFound())
		return
	}
	if err != nil {
		apierr.Write(w, err)
		return
	}
	base := c.st.BaseURL()
	api := base + "/repos/" + c.repo.FullName()
	self := api + "/contents/" + p + "?ref=" + url.QueryEscape(ref)
	html := base + "/" + c.repo.FullName() + "/blob/" + ref + "/" + p
	gitURL := api + "/git/blobs/" + blob
	apierr.WriteJSON(w, http.StatusOK, obj{
		"type": "file", "encoding": "base64", "size": len(content), "name": path.Base(p), "path": p,
		"content": wrap60(base64.StdEncoding.EncodeToString(content)), "sha": blob,
		"url": self, "git_url": gitURL, "html_url": html,
		"download_url": base + "/_raw/" + c.repo.FullName() + "/" + ref + "/" + p,
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
