package gateway

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/internal/pktline"
)

// maxDrain is how much of a refused push's pack is read and discarded so the client
// gets to read the refusal instead of a broken pipe.
const maxDrain = 64 << 20

// serveGit proxies smart-HTTP git (/git/{owner}/{repo}.git/...) for the run's repository,
// with the installation token, enforcing the push policy on receive-pack; and for the
// run's dependencies, fetching only, with the dependency token.
func (g *Gateway) serveGit(w http.ResponseWriter, r *http.Request, path string) {
	if g.git == nil {
		g.refuse(w, r, "git", http.StatusNotFound, "the git gateway is not configured")
		return
	}
	segs := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	if len(segs) < 3 || !validName(segs[0]) || !strings.HasSuffix(segs[1], ".git") || !validName(strings.TrimSuffix(segs[1], ".git")) {
		g.refuse(w, r, "git", http.StatusNotFound, "git paths look like /git/{owner}/{repo}.git/...")
		return
	}
	owner, name := segs[0], strings.TrimSuffix(segs[1], ".git")
	dep, isDep := g.dependency(owner, name)
	if !isDep && (!strings.EqualFold(owner, g.owner) || !strings.EqualFold(name, g.repo)) {
		// The token reads every public repository; a stranger's fork is their code.
		g.refuse(w, r, "git", http.StatusForbidden, fmt.Sprintf("%s/%s is refused [other-repository]: the git gateway serves only the run's repository, %s/%s%s", owner, name, g.owner, g.repo, g.dependencyList()))
		return
	}
	service := ""
	switch rest := segs[2]; {
	case rest == "info/refs" && r.Method == http.MethodGet:
		service = r.URL.Query().Get("service")
		if service != "git-upload-pack" && service != "git-receive-pack" {
			g.refuse(w, r, "git", http.StatusForbidden, "only smart HTTP is served (info/refs?service=git-upload-pack or git-receive-pack)")
			return
		}
	case (rest == "git-upload-pack" || rest == "git-receive-pack") && r.Method == http.MethodPost:
		service = rest
	default:
		g.refuse(w, r, "git", http.StatusForbidden, fmt.Sprintf("%s %s is not a smart HTTP git request", r.Method, rest))
		return
	}
	if isDep && service != "git-upload-pack" {
		// A dependency is read-only whatever its token could do: refused here, the pack
		// unread, before the git host is asked.
		g.refuse(w, r, "git", http.StatusForbidden, fmt.Sprintf("a push to %s is refused [dependency-read-only]: the run's dependencies are served for fetching only", dep))
		return
	}
	if service == "git-receive-pack" && g.cfg.PushRef == "" {
		// A run without a branch of its own (a plan or review run) may not push at all:
		// refused here, before the git host is asked, whatever the token could do.
		g.refuse(w, r, "git", http.StatusForbidden, "this run may not push")
		return
	}
	if service == "git-receive-pack" && !g.pushOpen.Load() {
		g.refuse(w, r, "git", http.StatusForbidden, "pushes are closed: the runner pushes the verified result itself, after the agent's last command")
		return
	}
	reason := "git " + service
	if service == "git-receive-pack" && r.Method == http.MethodPost {
		var ok bool
		if reason, ok = g.checkPush(w, r); !ok {
			return
		}
	}
	token := g.cfg.Token
	if isDep {
		token, reason = g.cfg.DependencyToken, reason+" (dependency "+dep+")"
	}
	c := &call{g: g, up: g.git, path: path, reason: reason, setAuth: func(h http.Header) {
		h.Set("Authorization", basicToken(token))
	}}
	c.forward(w, r)
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// checkPush reads the ref-update commands of a receive-pack request and lets it through
// only if every update is to the run's own branch and none deletes. On refusal it has
// answered the client with a git report the client prints.
func (g *Gateway) checkPush(w http.ResponseWriter, r *http.Request) (string, bool) {
	body := r.Body
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			g.refuse(w, r, "git", http.StatusBadRequest, "receive-pack body is not valid gzip")
			return "", false
		}
		body = io.NopCloser(zr)
		r.Header.Del("Content-Encoding")
		r.ContentLength = -1
	default:
		g.refuse(w, r, "git", http.StatusBadRequest, fmt.Sprintf("receive-pack body encoding %q is not supported", enc))
		return "", false
	}
	cl, err := pktline.ReadCommands(body)
	if err != nil {
		g.refuse(w, r, "git", http.StatusBadRequest, "push refused: "+err.Error())
		return "", false
	}
	var refused []string
	statuses := make([]pktline.RefStatus, len(cl.Updates))
	for i, u := range cl.Updates {
		statuses[i].Ref = u.Ref
		switch {
		case g.cfg.PushRef == "":
			statuses[i].Reason = "this run may not push"
		case u.Ref != g.cfg.PushRef:
			statuses[i].Reason = "this run may only push " + g.cfg.PushRef
		case u.IsDelete():
			statuses[i].Reason = "deleting " + u.Ref + " is refused"
		case g.cfg.PushFrom != "" && u.Old != g.cfg.PushFrom:
			// A fix run moves the pull request's branch on from the head it started
			// at, and from nothing else: not a create, not another commit's update.
			statuses[i].Reason = fmt.Sprintf("this run may only move %s on from %s (a fast-forward), not from %s", g.cfg.PushRef, g.cfg.PushFrom, u.Old)
		default:
			continue
		}
		refused = append(refused, u.Ref+" ("+statuses[i].Reason+")")
	}
	if len(refused) == 0 {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(cl.Raw), body), r.Body}
		refs := make([]string, len(cl.Updates))
		for i, u := range cl.Updates {
			refs[i] = u.Ref
		}
		return "push allowed: " + strings.Join(refs, ", "), true
	}
	for i := range statuses {
		if statuses[i].Reason == "" {
			statuses[i].Reason = "push refused as a whole because another ref was refused"
		}
	}
	rep := pktline.Report{Refs: statuses, Messages: []string{
		"bumper firewall: push refused before reaching the git host.",
		"bumper firewall: refused: " + strings.Join(refused, "; "),
	}}
	out, err := rep.Encode(cl)
	if err != nil {
		g.refuse(w, r, "git", http.StatusBadRequest, "push refused: "+err.Error())
		return "", false
	}
	io.CopyN(io.Discard, body, maxDrain)
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(out)
	// The HTTP status is 200 because git reads refusals from the report, not the status.
	g.record(r, &audit.Entry{Time: time.Now(), Kind: "git", Target: r.URL.Path, Reason: "push refused: " + strings.Join(refused, "; "), Status: http.StatusOK})
	return "", false
}

type readCloser struct {
	io.Reader
	io.Closer
}
