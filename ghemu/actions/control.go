package actions

import (
	"context"
	"crypto/hmac"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/oidc"
	"github.com/bumperdev/bumper/ghemu/state"
)

// maxControlWait bounds ?wait= on the run control route.
const maxControlWait = 10 * time.Minute

// ServeControl serves the control routes of runs, parts being the path below
// ControlPrefix split at slashes; false when the request is not one of them.
func (a *Actions) ServeControl(w http.ResponseWriter, r *http.Request, parts []string) bool {
	switch {
	// GET /_emulator/actions/runs/{id}/id-token?audience=A, bearer = the run's request
	// token: what ACTIONS_ID_TOKEN_REQUEST_URL answers on GitHub's runners.
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "actions" && parts[1] == "runs" && parts[3] == "id-token":
		a.serveIDToken(w, r, parts[2])
	// GET /_emulator/repos/{owner}/{repo}/actions/runs: the runs with their OIDC request pairs.
	case r.Method == http.MethodGet && len(parts) == 5 && parts[0] == "repos" && parts[3] == "actions" && parts[4] == "runs":
		runs, err := a.Runs(parts[1], parts[2])
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return true
		}
		apierr.WriteJSON(w, http.StatusOK, runs)
	// GET /_emulator/actions/jobs/{id}/logs?expires=…&signature=…: where the REST job
	// logs route redirects, as GitHub's signed log URLs.
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "actions" && parts[1] == "jobs" && parts[3] == "logs":
		a.serveSignedLog(w, r, parts[2])
	// GET /_emulator/repos/{owner}/{repo}/actions/runs/{id}[/log|/summary][?wait=DURATION].
	case r.Method == http.MethodGet && (len(parts) == 6 || len(parts) == 7) && parts[0] == "repos" && parts[3] == "actions" && parts[4] == "runs":
		id, err := strconv.ParseInt(parts[5], 10, 64)
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return true
		}
		a.serveRun(w, r, parts[1], parts[2], id, strings.Join(parts[6:], ""))
	// PATCH /_emulator/repos/{owner}/{repo}/actions/runs/{id} {"status","conclusion"}.
	case r.Method == http.MethodPatch && len(parts) == 6 && parts[0] == "repos" && parts[3] == "actions" && parts[4] == "runs":
		id, err := strconv.ParseInt(parts[5], 10, 64)
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return true
		}
		var u RunUpdate
		if err := apierr.Decode(r, &u); err != nil {
			apierr.Write(w, err)
			return true
		}
		if err := a.UpdateRun(parts[1], parts[2], id, u); err != nil {
			apierr.Write(w, apierr.Unprocessable(err.Error()))
			return true
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}

func (a *Actions) serveIDToken(w http.ResponseWriter, r *http.Request, idStr string) {
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var tok string
	a.store.Do(func(st *state.World) {
		rp, run := st.RunByID(id)
		if run == nil || !ok || bearer != run.OIDCRequestToken {
			err = apierr.BadCredentials()
			return
		}
		if run.Status == "completed" {
			err = apierr.New(http.StatusForbidden, "the run has completed; its ID token request token expired")
			return
		}
		aud := r.URL.Query().Get("audience")
		if aud == "" {
			aud = st.BaseURL() + "/" + rp.Owner
		}
		tok, err = a.oidc.Mint(st.BaseURL(), oidc.Claims{
			Audience: aud, Repository: rp.FullName(), RepositoryID: strconv.FormatInt(rp.ID, 10),
			WorkflowRef: rp.FullName() + "/" + run.WorkflowPath + "@refs/heads/" + run.Ref,
			Ref:         "refs/heads/" + run.Ref, SHA: run.HeadSHA, RunID: strconv.FormatInt(run.ID, 10),
			Actor: run.Actor,
		})
	})
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, map[string]any{"count": 1, "value": tok})
}

func (a *Actions) serveSignedLog(w http.ResponseWriter, r *http.Request, idStr string) {
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	q := r.URL.Query()
	var dir string
	var expired bool
	a.store.Do(func(st *state.World) {
		exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
		expired = err != nil || st.Now().Unix() > exp
		if _, run := st.RunByJobID(id); run != nil {
			dir = run.Dir
		}
	})
	if expired || !hmac.Equal([]byte(q.Get("signature")), []byte(a.logSignature(id, q.Get("expires")))) {
		apierr.Write(w, apierr.New(http.StatusForbidden, "the log URL is not valid or has expired; ask GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs again"))
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, jobLogFile))
	if dir == "" || err != nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b)
}

// serveRun serves one run (what = ""), its log or its summary. ?wait=DURATION first
// waits up to that long for the run to complete.
func (a *Actions) serveRun(w http.ResponseWriter, r *http.Request, owner, repoName string, id int64, what string) {
	if s := r.URL.Query().Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			apierr.Write(w, apierr.Validation("", "wait", "invalid", "wait must be a duration such as 30s"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), min(d, maxControlWait))
		_, err = a.WaitRun(ctx, owner, repoName, id)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			apierr.Write(w, apierr.NotFound())
			return
		}
	}
	switch what {
	case "":
		info, err := a.Run(owner, repoName, id)
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return
		}
		apierr.WriteJSON(w, http.StatusOK, info)
	case "log":
		b, err := a.RunLog(owner, repoName, id)
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(b)
	case "summary":
		s, err := a.RunSummary(owner, repoName, id)
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		_, _ = w.Write([]byte(s))
	default:
		apierr.Write(w, apierr.NotFound())
	}
}
