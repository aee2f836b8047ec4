package ghemu

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/bumperdev/bumper/ghemu/gitserver"
)

func (e *Emulator) renderRef(rp *repo, ref, sha string) obj {
	api := e.baseURL + "/repos/" + rp.fullName()
	return obj{"ref": ref, "node_id": nodeID("REF", int64(len(ref))), "url": api + "/git/" + ref,
		"object": obj{"type": "commit", "sha": sha, "url": api + "/git/commits/" + sha}}
}

func (e *Emulator) getRef(w http.ResponseWriter, r *http.Request, c *call) {
	refs, err := e.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	full := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	sha, ok := refs[full]
	if !ok {
		writeError(w, errNotFound())
		return
	}
	writeJSON(w, http.StatusOK, e.renderRef(c.repo, full, sha))
}

func (e *Emulator) listMatchingRefs(w http.ResponseWriter, r *http.Request, c *call) {
	refs, err := e.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	prefix := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	var names []string
	for n := range refs {
		if strings.HasPrefix(n, prefix) && n != "HEAD" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	writeList(e, w, r, names, func(n string) obj { return e.renderRef(c.repo, n, refs[n]) })
}

// refIsProtected reports whether branch protection refuses who a direct update of ref.
// GitHub applies it alike to pushes and to API ref updates: only an admin's own
// credential passes, and only while the protection does not enforce admins.
func (e *Emulator) refIsProtected(who *principal, rp *repo, ref string) bool {
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || rp.Protected[branch] == nil {
		return false
	}
	admin := who != nil && who.token == nil && roleAtLeast(e.roleOf(who.user, rp), "admin")
	return !admin || rp.Protected[branch].EnforceAdmins
}

func (e *Emulator) createRef(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if !strings.HasPrefix(req.Ref, "refs/") || strings.Count(req.Ref, "/") < 2 {
		writeError(w, errUnprocessable("Reference name must start with 'refs/' and have at least two slashes."))
		return
	}
	if !isSHA(req.SHA) {
		writeError(w, errUnprocessable("Object does not exist"))
		return
	}
	if err := e.git.UpdateRef(r.Context(), c.repo.Owner, c.repo.Name, req.Ref, req.SHA, ""); err != nil {
		writeError(w, refError(err))
		return
	}
	c.mutated = true
	e.branchMoved(c.repo, req.Ref, req.SHA, c.who.actor())
	writeJSON(w, http.StatusCreated, e.renderRef(c.repo, req.Ref, req.SHA))
}

func (e *Emulator) updateRef(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	full := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	if !isSHA(req.SHA) {
		writeError(w, errUnprocessable("Object does not exist"))
		return
	}
	if e.refIsProtected(c.who, c.repo, full) {
		writeError(w, errUnprocessable("Protected branch update failed for "+full+"."))
		return
	}
	if err := e.git.MoveRef(r.Context(), c.repo.Owner, c.repo.Name, full, req.SHA, req.Force); err != nil {
		writeError(w, refError(err))
		return
	}
	c.mutated = true
	e.branchMoved(c.repo, full, req.SHA, c.who.actor())
	writeJSON(w, http.StatusOK, e.renderRef(c.repo, full, req.SHA))
}

func (e *Emulator) deleteRef(w http.ResponseWriter, r *http.Request, c *call) {
	full := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	if e.refIsProtected(c.who, c.repo, full) {
		writeError(w, errUnprocessable("Protected branch update failed for "+full+"."))
		return
	}
	if err := e.git.DeleteRef(r.Context(), c.repo.Owner, c.repo.Name, full); err != nil {
		if ae := (*apiError)(nil); errors.As(refError(err), &ae) && ae.Status == http.StatusUnprocessableEntity {
			// GitHub's description gives this 422 no body.
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		writeError(w, refError(err))
		return
	}
	c.mutated = true
	w.WriteHeader(http.StatusNoContent)
}

// refError maps the git server's errors to GitHub's 422 messages.
func refError(err error) error {
	switch {
	case errors.Is(err, gitserver.ErrRefExists):
		return errUnprocessable("Reference already exists")
	case errors.Is(err, gitserver.ErrRefNotFound):
		return errUnprocessable("Reference does not exist")
	case errors.Is(err, gitserver.ErrObjectNotFound):
		return errUnprocessable("Object does not exist")
	case errors.Is(err, gitserver.ErrRefMismatch), errors.Is(err, gitserver.ErrRefConflict):
		return errUnprocessable("Reference cannot be updated")
	case errors.Is(err, gitserver.ErrNotFastForward):
		return errUnprocessable("Update is not a fast forward")
	case errors.Is(err, gitserver.ErrInvalidName):
		return errUnprocessable("Reference name is not valid")
	}
	return err
}

// branchMoved moves the open pull requests whose head or base branch moved, and says
// so with a pull_request synchronize webhook.
func (e *Emulator) branchMoved(rp *repo, ref, sha, actor string) {
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return
	}
	rp.PushedAt = e.timestamp()
	for n, p := range rp.Pulls {
		is := rp.Issues[n]
		if is.State != "open" {
			continue
		}
		if p.Head == branch && p.HeadSHA != sha && sha != "" {
			before := p.HeadSHA
			p.HeadSHA = sha
			is.UpdatedAt = e.timestamp()
			e.emit("pull_request", "synchronize", rp, actor, obj{"number": n, "before": before, "after": sha,
				"pull_request": e.renderPull(rp, is, p)})
		}
		if p.Base == branch && sha != "" {
			p.BaseSHA = sha
		}
	}
}
