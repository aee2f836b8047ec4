package rest

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

// GitHub's Git Data API: blobs, trees and commits written into the repository without
// moving a ref (the refs routes are in refs.go). A commit an App creates with an
// installation token, giving no author, committer or signature of its own, is signed
// by GitHub and shows Verified, as GitHub documents for bots ("Signature verification
// for bots"); any other is unsigned.

// maxTreeEntries bounds the entries of one POST /git/trees.
const maxTreeEntries = 100000

func (a *API) createBlob(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Content == nil {
		apierr.Write(w, apierr.Validation("Blob", "content", "missing_field", ""))
		return
	}
	content := []byte(*req.Content)
	switch strings.ToLower(req.Encoding) {
	case "", "utf-8", "utf8":
	case "base64":
		var err error
		if content, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(*req.Content), "")); err != nil {
			apierr.Write(w, apierr.Unprocessable("Problems parsing JSON"))
			return
		}
	default:
		apierr.Write(w, apierr.Validation("Blob", "encoding", "invalid", "encoding must be utf-8 or base64"))
		return
	}
	sha, err := a.git.WriteBlob(r.Context(), c.repo.Owner, c.repo.Name, content)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusCreated, obj{"sha": sha, "url": c.st.BaseURL() + "/repos/" + c.repo.FullName() + "/git/blobs/" + sha})
}

// treeModes are the modes GitHub's description allows, with the type each goes with.
var treeModes = map[string]string{"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree", "160000": "commit"}

func (a *API) createTree(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if len(req.Tree) == 0 || len(req.Tree) > maxTreeEntries {
		apierr.Write(w, apierr.Validation("Tree", "tree", "invalid", "tree must list 1 to 100000 entries"))
		return
	}
	entries := make([]gitserver.TreeEntry, 0, len(req.Tree))
	for _, e := range req.Tree {
		typ, ok := treeModes[e.Mode]
		if !ok || e.Type != "" && e.Type != typ {
			apierr.Write(w, apierr.Unprocessable("tree.mode and tree.type of "+e.Path+" do not agree"))
			return
		}
		ent := gitserver.TreeEntry{Path: e.Path, Mode: e.Mode, Type: typ}
		switch {
		case e.SHA != nil && e.Content != nil:
			apierr.Write(w, apierr.Unprocessable("Must supply either tree.sha or tree.content. Request will be rejected if both are present."))
			return
		case e.Content != nil:
			sha, err := a.git.WriteBlob(r.Context(), c.repo.Owner, c.repo.Name, []byte(*e.Content))
			if err != nil {
				apierr.Write(w, err)
				return
			}
			ent.SHA = sha
		case e.SHA != nil:
			ent.SHA = *e.SHA
		}
		entries = append(entries, ent)
	}
	sha, list, err := a.git.MakeTree(r.Context(), c.repo.Owner, c.repo.Name, req.BaseTree, entries)
	if err != nil {
		apierr.Write(w, gitDataError(err))
		return
	}
	api := c.st.BaseURL() + "/repos/" + c.repo.FullName() + "/git/"
	items := make([]obj, 0, len(list))
	for _, e := range list {
		o := obj{"path": e.Path, "mode": e.Mode, "type": e.Type, "sha": e.SHA, "url": api + e.Type + "s/" + e.SHA}
		if e.Type == "blob" {
			o["size"] = e.Size
		}
		items = append(items, o)
	}
	apierr.WriteJSON(w, http.StatusCreated, obj{"sha": sha, "url": api + "trees/" + sha, "tree": items, "truncated": false})
}

// gitPerson is an author or committer of POST /git/commits.
type gitPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (p *gitPerson) signature(field string) (gitserver.Signature, error) {
	sig := gitserver.Signature{Name: p.Name, Email: p.Email}
	if p.Date != "" {
		t, err := time.Parse(time.RFC3339, p.Date)
		if err != nil {
			return sig, apierr.Validation("Commit", field+".date", "invalid", "date must be ISO 8601 (YYYY-MM-DDTHH:MM:SSZ)")
		}
		sig.When = t
	}
	return sig, nil
}

func (a *API) createCommit(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Message   *string    `json:"message"`
		Tree      string     `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *gitPerson `json:"author"`
		Committer *gitPerson `json:"committer"`
		Signature string     `json:"signature"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Message == nil || req.Tree == "" {
		apierr.Write(w, apierr.Validation("Commit", "message", "missing_field", "message and tree are required"))
		return
	}
	now := c.st.Timestamp()
	spec := gitserver.CommitSpec{Tree: req.Tree, Parents: req.Parents, Message: *req.Message,
		Author: conversation.Signature(c.st, c.who.actor())}
	spec.Author.When = now
	var err error
	if req.Author != nil {
		if spec.Author, err = req.Author.signature("author"); err != nil {
			apierr.Write(w, err)
			return
		}
	}
	spec.Committer = spec.Author
	if req.Committer != nil {
		if spec.Committer, err = req.Committer.signature("committer"); err != nil {
			apierr.Write(w, err)
			return
		}
	}
	// GitHub signs only a bot's commit that says nothing of its own about who made it.
	signs := c.who != nil && c.who.token != nil && req.Author == nil && req.Committer == nil && req.Signature == ""
	switch {
	case signs:
		spec.Sign = gitserver.WebFlowSignature
	case req.Signature != "":
		sig := req.Signature
		spec.Sign = func(string) string { return sig }
	}
	sha, payload, signature, err := a.git.WriteCommit(r.Context(), c.repo.Owner, c.repo.Name, spec)
	if err != nil {
		apierr.Write(w, gitDataError(err))
		return
	}
	switch {
	case signs:
		c.repo.SetVerification(sha, state.Verification{Verified: true, Reason: "valid", Signature: signature, Payload: payload, VerifiedAt: now})
	case signature != "":
		// A signature the caller made: the emulator knows no one's keys.
		c.repo.SetVerification(sha, state.Verification{Reason: "unknown_key", Signature: signature, Payload: payload})
	}
	a.writeGitCommit(w, r, c, sha, http.StatusCreated)
}

func (a *API) getGitCommit(w http.ResponseWriter, r *http.Request, c *call) {
	sha := c.params["commit_sha"]
	if !render.IsSHA(sha) {
		apierr.Write(w, apierr.NotFound())
		return
	}
	a.writeGitCommit(w, r, c, sha, http.StatusOK)
}

// writeGitCommit answers with the git-commit object of sha.
func (a *API) writeGitCommit(w http.ResponseWriter, r *http.Request, c *call, sha string, status int) {
	ci, err := a.git.Commit(r.Context(), c.repo.Owner, c.repo.Name, sha)
	if err != nil {
		if errors.Is(err, gitserver.ErrObjectNotFound) {
			err = apierr.NotFound()
		}
		apierr.Write(w, err)
		return
	}
	api := c.st.BaseURL() + "/repos/" + c.repo.FullName()
	html := c.st.BaseURL() + "/" + c.repo.FullName()
	parents := make([]obj, 0, len(ci.Parents))
	for _, p := range ci.Parents {
		parents = append(parents, obj{"sha": p, "url": api + "/git/commits/" + p, "html_url": html + "/commit/" + p})
	}
	person := func(s gitserver.Signature) obj {
		return obj{"name": s.Name, "email": s.Email, "date": render.TS(s.When)}
	}
	apierr.WriteJSON(w, status, obj{
		"sha": ci.SHA, "node_id": render.NodeID("C", int64(len(ci.SHA))), "url": api + "/git/commits/" + ci.SHA,
		"html_url": html + "/commit/" + ci.SHA, "author": person(ci.Author), "committer": person(ci.Committer),
		"message": ci.Message, "tree": obj{"sha": ci.Tree, "url": api + "/git/trees/" + ci.Tree},
		"parents": parents, "verification": renderVerification(c.repo.Verification(ci.SHA)),
	})
}

// renderVerification is a commit's verification object.
func renderVerification(v state.Verification) obj {
	o := obj{"verified": v.Verified, "reason": v.Reason, "signature": nil, "payload": nil, "verified_at": nil}
	if v.Signature != "" {
		o["signature"], o["payload"] = v.Signature, v.Payload
	}
	if !v.VerifiedAt.IsZero() {
		o["verified_at"] = render.TS(v.VerifiedAt)
	}
	return o
}

// gitDataError maps the git server's errors to the Git Data API's 422s.
func gitDataError(err error) error {
	switch {
	case errors.Is(err, gitserver.ErrObjectNotFound):
		return apierr.Unprocessable(strings.TrimPrefix(err.Error(), gitserver.ErrObjectNotFound.Error()+": ") + " is not a valid object")
	case errors.Is(err, gitserver.ErrInvalidName):
		return apierr.Unprocessable(err.Error())
	}
	return err
}
