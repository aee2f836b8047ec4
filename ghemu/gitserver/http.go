package gitserver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/url"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/pktline"
)

// Log keys.
const (
	logOwner   = "owner"
	logRepo    = "repo"
	logService = "service"
	logStatus  = "status"
	logUpdates = "updates"
	logStderr  = "stderr"
)

const (
	serviceUpload  = "git-upload-pack"
	serviceReceive = "git-receive-pack"
)

// endpoint is a parsed smart-HTTP request path.
type endpoint struct {
	owner, repo string
	service     string
	infoRefs    bool // GET info/refs?service=...; otherwise POST /<service>
}

// parseEndpoint recognises /{owner}/{repo}.git/info/refs?service=<svc> and
// /{owner}/{repo}.git/<svc>. Percent-encoded paths are refused so that the names
// checked are exactly the names used.
func parseEndpoint(u *url.URL) (endpoint, bool) {
	if u.RawPath != "" || !strings.HasPrefix(u.Path, "/") {
		return endpoint{}, false
	}
	parts := strings.Split(u.Path[1:], "/")
	if len(parts) < 3 {
		return endpoint{}, false
	}
	repo, ok := strings.CutSuffix(parts[1], ".git")
	if !ok || checkOwner(parts[0]) != nil || checkRepo(repo) != nil {
		return endpoint{}, false
	}
	ep := endpoint{owner: parts[0], repo: repo}
	switch {
	case len(parts) == 4 && parts[2] == "info" && parts[3] == "refs":
		q := u.Query()
		svc := q["service"]
		if len(q) != 1 || len(svc) != 1 || (svc[0] != serviceUpload && svc[0] != serviceReceive) {
			return endpoint{}, false
		}
		ep.infoRefs, ep.service = true, svc[0]
	case len(parts) == 3 && (parts[2] == serviceUpload || parts[2] == serviceReceive) && u.RawQuery == "":
		ep.service = parts[2]
	default:
		return endpoint{}, false
	}
	return ep, true
}

// ServeHTTP serves git's smart HTTP protocol (v0, v1 and v2) at
// /{owner}/{repo}.git/info/refs, /git-upload-pack and /git-receive-pack. Mount it with
// http.StripPrefix to serve under a prefix. Everything else gets Options.NotFound.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, ok := parseEndpoint(r.URL)
	if !ok {
		s.opts.NotFound.ServeHTTP(w, r)
		return
	}
	logger := zerolog.Ctx(r.Context()).With().
		Str(logOwner, ep.owner).Str(logRepo, ep.repo).Str(logService, ep.service).Logger()
	wantMethod := http.MethodPost
	if ep.infoRefs {
		wantMethod = http.MethodGet
	}
	if r.Method != wantMethod {
		w.Header().Set("Allow", wantMethod)
		http.Error(w, "method not allowed: use "+wantMethod, http.StatusMethodNotAllowed)
		return
	}
	access := Read
	if ep.service == serviceReceive {
		access = Write
	}
	// The callbacks get the names as stored, whatever case the URL used; whether the
	// repository exists is only revealed after Authorize has had its say.
	dir, missing := s.openRepo(ep.owner, ep.repo)
	if missing == nil {
		ep.owner, ep.repo = storedNames(dir)
	}
	if err := s.opts.Authorize(r, ep.owner, ep.repo, access); err != nil {
		s.refuse(w, r, &logger, err)
		return
	}
	if missing != nil {
		s.opts.NotFound.ServeHTTP(w, r)
		return
	}
	if ep.infoRefs {
		s.backend(w, r, ep, r.Body, r.ContentLength, &logger)
		return
	}
	body, length, status, err := requestBody(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if ep.service == serviceUpload {
		s.backend(w, r, ep, body, length, &logger)
		return
	}
	s.receivePack(w, r, ep, dir, body, length, &logger)
}

// refuse answers an Authorize error.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, logger *zerolog.Logger, err error) {
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
		logger.Error().Err(err).Msg("git request authorization failed")
		http.Error(w, "internal error while checking access", http.StatusInternalServerError)
		return
	}
	logger.Info().Int(logStatus, ae.Status).Str("reason", ae.Message).Msg("git request refused")
	switch ae.Status {
	case http.StatusNotFound:
		s.opts.NotFound.ServeHTTP(w, r)
		return
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
	}
	msg := ae.Message
	if msg == "" {
		msg = http.StatusText(ae.Status)
	}
	http.Error(w, msg, ae.Status)
}

// requestBody undoes Content-Encoding: git gzips large upload-pack requests, and a push
// must be readable to check its commands. The length is -1 when unknown; on error the
// status says whether the encoding is unknown (415) or the body broken (400).
func requestBody(r *http.Request) (io.Reader, int64, int, error) {
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
		return r.Body, r.ContentLength, 0, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, 0, http.StatusBadRequest, errors.New("request body is not valid gzip: " + err.Error())
		}
		return zr, -1, 0, nil
	default:
		return nil, 0, http.StatusUnsupportedMediaType, errors.New("unsupported Content-Encoding " + enc + "; send the body plain or gzipped")
	}
}

// receivePack checks a push's commands, then hands the push to git with the ref lock of
// the repository held, so that what changed can be told to Options.Pushed exactly.
func (s *Server) receivePack(w http.ResponseWriter, r *http.Request, ep endpoint, dir string, body io.Reader, length int64, logger *zerolog.Logger) {
	cl, err := pktline.ReadCommands(body)
	if err != nil {
		logger.Info().Err(err).Msg("malformed push refused")
		http.Error(w, "malformed push: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(cl.Updates) > 0 && s.opts.CheckPush != nil {
		if err := s.opts.CheckPush(r, ep.owner, ep.repo, cl.Updates); err != nil {
			logger.Info().Err(err).Int(logUpdates, len(cl.Updates)).Msg("push refused")
			s.refusePush(w, cl, body, err, logger)
			return
		}
	}
	var guard *PathGuard
	if s.opts.GuardPaths != nil && movesToNew(cl.Updates) {
		guard = s.opts.GuardPaths(r, ep.owner, ep.repo, cl.Updates)
	}
	unlock := s.lock(ep.owner, ep.repo)
	if guard != nil {
		// Checked with the lock held, so that "no existing ref" still holds when git
		// receive-pack runs.
		q, refused, err := s.checkGuard(r.Context(), dir, cl, body, guard)
		if err != nil {
			unlock()
			logger.Error().Err(err).Msg("failed to check the paths a push changes")
			http.Error(w, "internal error checking the pushed commits", http.StatusInternalServerError)
			return
		}
		if refused != nil {
			unlock()
			logger.Info().Err(refused).Int(logUpdates, len(cl.Updates)).Msg("push refused for a guarded path")
			s.refusePush(w, cl, body, refused, logger)
			return
		}
		defer q.close()
		if body, err = q.rest(); err != nil {
			unlock()
			logger.Error().Err(err).Msg("failed to replay a checked push")
			http.Error(w, "internal error replaying the push", http.StatusInternalServerError)
			return
		}
	}
	before, err := s.refs(r.Context(), dir)
	if err != nil {
		unlock()
		logger.Error().Err(err).Msg("failed to read refs before a push")
		http.Error(w, "internal error reading refs", http.StatusInternalServerError)
		return
	}
	full := io.MultiReader(bytes.NewReader(cl.Raw), body)
	s.backend(w, r, ep, full, length, logger)
	after, err := s.refs(r.Context(), dir)
	unlock()
	if err != nil {
		logger.Error().Err(err).Msg("failed to read refs after a push")
		return
	}
	var done []pktline.RefUpdate
	for _, u := range cl.Updates {
		now, exists := after[u.Ref]
		was := before[u.Ref]
		if u.IsDelete() && !exists && was != "" || !u.IsDelete() && now == u.New && was != u.New {
			done = append(done, u)
		}
	}
	logger.Info().Int(logUpdates, len(done)).Msg("push finished")
	if len(done) > 0 && s.opts.Pushed != nil {
		s.opts.Pushed(r, ep.owner, ep.repo, done)
	}
}

// movesToNew reports whether a push sets a ref to a value (rather than only deleting).
func movesToNew(updates []pktline.RefUpdate) bool {
	for _, u := range updates {
		if !u.IsDelete() {
			return true
		}
	}
	return false
}

// refusePush answers a push CheckPush refused with a report-status the git client
// prints: every ref "[remote rejected]" with the reason.
func (s *Server) refusePush(w http.ResponseWriter, cl *pktline.CommandList, body io.Reader, reason error, logger *zerolog.Logger) {
	// Read the pack the client is still sending, so it reads the report instead of
	// failing on a closed connection.
	if _, err := io.Copy(io.Discard, body); err != nil {
		logger.Info().Err(err).Msg("failed to drain a refused push")
	}
	msg := reason.Error()
	if !cl.HasCapability("report-status") && !cl.HasCapability("report-status-v2") {
		// Without report-status the client would not learn the push failed.
		http.Error(w, "push refused: "+msg, http.StatusForbidden)
		return
	}
	rep := pktline.Report{Messages: []string{"error: " + msg}}
	for _, u := range cl.Updates {
		rep.Refs = append(rep.Refs, pktline.RefStatus{Ref: u.Ref, Reason: msg})
	}
	out, err := rep.Encode(cl)
	if err != nil {
		logger.Error().Err(err).Msg("failed to encode a push refusal")
		http.Error(w, "push refused: "+msg, http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.Header().Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	if _, err := w.Write(out); err != nil {
		logger.Info().Err(err).Msg("failed to send a push refusal")
	}
}

// backend runs git http-backend for one request. The request it sees carries only the
// canonical path, the service query and the body; the Authorization header stays here.
func (s *Server) backend(w http.ResponseWriter, r *http.Request, ep endpoint, body io.Reader, length int64, logger *zerolog.Logger) {
	req := r.Clone(r.Context())
	req.URL = &url.URL{Path: "/" + ep.owner + "/" + ep.repo + ".git/" + ep.service}
	if ep.infoRefs {
		req.URL = &url.URL{Path: "/" + ep.owner + "/" + ep.repo + ".git/info/refs", RawQuery: "service=" + ep.service}
	}
	req.Header.Del("Authorization")
	req.Header.Del("Cookie")
	req.Header.Del("Content-Encoding")
	req.TransferEncoding = nil
	req.Body = io.NopCloser(body)
	req.ContentLength = length
	stderr := stderrLogger{logger: logger}
	h := &cgi.Handler{
		Path: s.backendPath,
		Dir:  s.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + remoteUser(r),
			"HOME=" + s.root,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			// Authorize has already decided; git must not refuse on its own defaults.
			"GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=uploadpack.allowFilter", "GIT_CONFIG_VALUE_1=true",
		},
		Logger: log.New(stderr, "", 0),
		Stderr: stderr,
	}
	h.ServeHTTP(w, req)
}

// remoteUser names the pusher in git's reflogs: the Basic-auth user name when it is a
// plain word ("x-access-token"), never the password.
func remoteUser(r *http.Request) string {
	user, _, ok := r.BasicAuth()
	if !ok || user == "" || len(user) > 100 {
		return "anonymous"
	}
	for i := 0; i < len(user); i++ {
		if c := user[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' && c != '@' {
			return "anonymous"
		}
	}
	return user
}

// stderrLogger sends what git http-backend writes on stderr to the request's log.
type stderrLogger struct{ logger *zerolog.Logger }

func (l stderrLogger) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		l.logger.Warn().Str(logStderr, msg).Msg("git http-backend")
	}
	return len(p), nil
}
