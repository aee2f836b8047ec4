package rest

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

// cutBranch is the branch a ref names ("refs/heads/<branch>"), if it names one.
func cutBranch(ref string) (string, bool) { return strings.CutPrefix(ref, "refs/heads/") }

func renderRef(base string, rp *state.Repo, ref, sha string) obj {
	api := base + "/repos/" + rp.FullName()
	return obj{"ref": ref, "node_id": render.NodeID("REF", int64(len(ref))), "url": api + "/git/" + ref,
		"object": obj{"type": "commit", "sha": sha, "url": api + "/git/commits/" + sha}}
}

func (a *API) getRef(w http.ResponseWriter, r *http.Request, c *call) {
	refs, err := a.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	full := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	sha, ok := refs[full]
	if !ok {
		apierr.Write(w, apierr.NotFound())
		return
	}
	apierr.WriteJSON(w, http.StatusOK, renderRef(c.st.BaseURL(), c.repo, full, sha))
}

func (a *API) listMatchingRefs(w http.ResponseWriter, r *http.Request, c *call) {
	refs, err := a.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		apierr.Write(w, err)
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
	writeList(c, w, r, names, func(n string) obj { return renderRef(c.st.BaseURL(), c.repo, n, refs[n]) })
}

func (a *API) createRef(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if !strings.HasPrefix(req.Ref, "refs/") || strings.Count(req.Ref, "/") < 2 {
		apierr.Write(w, apierr.Unprocessable("Reference name must start with 'refs/' and have at least two slashes."))
		return
	}
	if !render.IsSHA(req.SHA) {
		apierr.Write(w, apierr.Unprocessable("Object does not exist"))
		return
	}
	if unsignedMove(c.who, c.repo, req.Ref, req.SHA) {
		apierr.Write(w, apierr.Unprocessable("Protected branch update failed for "+req.Ref+". Commits must have verified signatures."))
		return
	}
	if err := a.git.UpdateRef(r.Context(), c.repo.Owner, c.repo.Name, req.Ref, req.SHA, ""); err != nil {
		apierr.Write(w, refError(err))
		return
	}
	c.st.MarkChanged()
	a.conv.RefMoved(r.Context(), c.st, c.repo, req.Ref, "", req.SHA, c.who.actor())
	apierr.WriteJSON(w, http.StatusCreated, renderRef(c.st.BaseURL(), c.repo, req.Ref, req.SHA))
}

func (a *API) updateRef(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	full := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	if !render.IsSHA(req.SHA) {
		apierr.Write(w, apierr.Unprocessable("Object does not exist"))
		return
	}
	if unsignedMove(c.who, c.repo, full, req.SHA) {
		apierr.Write(w, apierr.Unprocessable("Protected branch update failed for "+full+". Commits must have verified signatures."))
		return
	}
	if refIsProtected(c.who, c.repo, full) {
		apierr.Write(w, apierr.Unprocessable("Protected branch update failed for "+full+"."))
		return
	}
	before := a.refNow(r, c, full)
	if err := a.git.MoveRef(r.Context(), c.repo.Owner, c.repo.Name, full, req.SHA, req.Force); err != nil {
		apierr.Write(w, refError(err))
		return
	}
	c.st.MarkChanged()
	a.conv.RefMoved(r.Context(), c.st, c.repo, full, before, req.SHA, c.who.actor())
	apierr.WriteJSON(w, http.StatusOK, renderRef(c.st.BaseURL(), c.repo, full, req.SHA))
}

func (a *API) deleteRef(w http.ResponseWriter, r *http.Request, c *call) {
	full := "refs/" + strings.TrimPrefix(c.params["ref"], "refs/")
	if refIsProtected(c.who, c.repo, full) {
		apierr.Write(w, apierr.Unprocessable("Protected branch update failed for "+full+"."))
		return
	}
	before := a.refNow(r, c, full)
	if err := a.git.DeleteRef(r.Context(), c.repo.Owner, c.repo.Name, full); err != nil {
		if apierr.StatusOf(refError(err)) == http.StatusUnprocessableEntity {
			// GitHub's description gives this 422 no body.
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		apierr.Write(w, refError(err))
		return
	}
	c.st.MarkChanged()
	a.conv.RefMoved(r.Context(), c.st, c.repo, full, before, "", c.who.actor())
	w.WriteHeader(http.StatusNoContent)
}

// refNow is where ref points before a route moves it ("" when it does not exist), for
// the push webhook's before. Only the refs API moves refs inside the state lock, but a
// git push may move the same ref under its own lock meanwhile; the move's own
// compare-and-swap still decides, and the webhook then names the value read here.
func (a *API) refNow(r *http.Request, c *call, ref string) string {
	refs, err := a.git.Refs(r.Context(), c.repo.Owner, c.repo.Name)
	if err != nil {
		return ""
	}
	return refs[ref]
}

// refError maps the git server's errors to GitHub's 422 messages.
func refError(err error) error {
	switch {
	case errors.Is(err, gitserver.ErrRefExists):
		return apierr.Unprocessable("Reference already exists")
	case errors.Is(err, gitserver.ErrRefNotFound):
		return apierr.Unprocessable("Reference does not exist")
	case errors.Is(err, gitserver.ErrObjectNotFound):
		return apierr.Unprocessable("Object does not exist")
	case errors.Is(err, gitserver.ErrRefMismatch), errors.Is(err, gitserver.ErrRefConflict):
		return apierr.Unprocessable("Reference cannot be updated")
	case errors.Is(err, gitserver.ErrNotFastForward):
		return apierr.Unprocessable("Update is not a fast forward")
	case errors.Is(err, gitserver.ErrInvalidName):
		return apierr.Unprocessable("Reference name is not valid")
	}
	return err
}
