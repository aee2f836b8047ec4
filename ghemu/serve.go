package ghemu

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds request bodies; GitHub refuses far smaller ones for most routes.
const maxBody = 25 << 20

// call is one matched REST request.
type call struct {
	e      *Emulator
	params map[string]string
	who    *principal
	repo   *repo
	// mutated marks that the handler changed state, so the dispatcher saves it.
	mutated bool
}

// Handler serves the REST API, the git smart-HTTP server, the OIDC issuer and the
// emulator's control routes.
func (e *Emulator) Handler() http.Handler {
	return http.HandlerFunc(e.serveHTTP)
}

func (e *Emulator) serveHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			e.log.Error().Interface("panic", v).Str("path", r.URL.Path).Msg("emulator handler panicked")
			writeError(w, newError(http.StatusInternalServerError, "Server Error"))
		}
	}()
	w.Header().Set("X-GitHub-Request-Id", randomToken("")[:16])
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	switch {
	case isGitPath(r.URL.Path):
		e.git.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/.well-known/"):
		e.serveOIDC(w, r)
	case strings.HasPrefix(r.URL.Path, controlPrefix):
		e.serveControl(w, r)
	case isManifestPage(r):
		e.serveManifestPage(w, r)
	case isWebRequest(r):
		e.serveWeb(w, r)
	default:
		e.serveREST(w, r)
	}
}

// isGitPath reports whether the path is a git smart-HTTP path "/{owner}/{repo}.git/...".
func isGitPath(p string) bool {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	return len(parts) >= 2 && strings.HasSuffix(parts[1], ".git")
}

func (e *Emulator) serveREST(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rt, params := e.routes.match(r.Method, r.URL.EscapedPath())
	if rt == nil {
		writeError(w, errNotFound())
		return
	}
	who, err := e.authenticate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	c := &call{e: e, params: params, who: who}
	if owner, ok := params["owner"]; ok {
		c.repo = e.st.repoByName(owner, params["repo"])
		if c.repo == nil {
			if err := e.authorize(who, need{auth: rt.need.auth}, nil); err != nil {
				writeError(w, err)
				return
			}
			writeError(w, errNotFound())
			return
		}
	}
	if err := e.authorize(who, rt.need, c.repo); err != nil {
		writeError(w, err)
		return
	}
	counted := rt.need.auth != authNone
	if counted {
		if win := e.window(who, r); win.used >= win.limit {
			win.setHeaders(w.Header())
			writeError(w, newError(http.StatusForbidden, "API rate limit exceeded for "+rateKeyLabel(who)+"."))
			return
		}
	}
	rw := &recorder{header: http.Header{}}
	rt.handler(rw, r, c)
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	e.finish(w, r, rw, who, counted)
	if c.mutated {
		e.saveLocked()
	}
}

// finish applies GitHub's response conventions: rate-limit headers (a conditional GET
// answered 304 does not count against the limit, as on GitHub) and ETags.
func (e *Emulator) finish(w http.ResponseWriter, r *http.Request, rw *recorder, who *principal, counted bool) {
	for k, v := range rw.header {
		w.Header()[k] = v
	}
	isGet := r.Method == http.MethodGet || r.Method == http.MethodHead
	notModified := false
	if isGet && rw.status == http.StatusOK {
		sum := sha256.Sum256(rw.body.Bytes())
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		w.Header().Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
			notModified = true
		}
	}
	if counted {
		e.spend(who, r, notModified).setHeaders(w.Header())
	}
	if notModified {
		w.Header().Del("Content-Type")
		w.Header().Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(rw.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(rw.body.Bytes())
	}
}

func etagMatch(header, etag string) bool {
	strong := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == etag || strings.TrimPrefix(t, "W/") == strong {
			return true
		}
	}
	return false
}

// recorder buffers a handler's response so ETags and rate limits can be applied after.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// decode reads a JSON request body strictly enough to give GitHub's errors: 400 for
// malformed JSON, 422 for a wrong type.
func decode(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	return parseJSON(body, v)
}

// readBody reads up to one byte more than maxBody, so parseJSON can refuse a larger body.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, errBadJSON(err.Error())
	}
	return body, nil
}

// parseJSON is decode's work on a body already read.
func parseJSON(body []byte, v any) error {
	if len(body) > maxBody {
		return newError(http.StatusRequestEntityTooLarge, "Request body too large")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errBadJSON("the request body is empty")
	}
	if err := json.Unmarshal(body, v); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
			return errValidation("", te.Field, "invalid",
				fmt.Sprintf("%s is not a %s", te.Field, te.Type.String()))
		}
		return errBadJSON(err.Error())
	}
	return nil
}

// decodeOptional is decode for routes whose body may be absent.
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 && r.Header.Get("Transfer-Encoding") == "" {
		return nil
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return parseJSON(body, v)
}

// page applies GitHub's pagination (page, per_page up to 100, default 30) to n items
// and sets the Link header. It returns the half-open range to serve.
func page(w http.ResponseWriter, r *http.Request, base string, n int) (int, int, error) {
	q := r.URL.Query()
	per := 30
	if s := q.Get("per_page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0, 0, errValidation("", "per_page", "invalid", "per_page must be a positive integer")
		}
		per = min(v, 100)
	}
	pg := 1
	if s := q.Get("page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0, 0, errValidation("", "page", "invalid", "page must be a positive integer")
		}
		pg = v
	}
	last := max(1, (n+per-1)/per)
	var links []string
	link := func(p int, rel string) {
		q2 := r.URL.Query()
		q2.Set("page", strconv.Itoa(p))
		q2.Set("per_page", strconv.Itoa(per))
		links = append(links, fmt.Sprintf(`<%s%s?%s>; rel="%s"`, base, r.URL.Path, q2.Encode(), rel))
	}
	if pg > 1 {
		link(pg-1, "prev")
	}
	if pg < last {
		link(pg+1, "next")
		link(last, "last")
	}
	if pg > 1 {
		link(1, "first")
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	start := min((pg-1)*per, n)
	return start, min(start+per, n), nil
}

func (e *Emulator) timestamp() time.Time { return e.now().UTC().Truncate(time.Second) }

// pageOf renders one page of items (see page); the caller wraps or writes the result.
func pageOf[T any](e *Emulator, w http.ResponseWriter, r *http.Request, items []T, render func(T) obj) ([]obj, error) {
	lo, hi, err := page(w, r, e.baseURL, len(items))
	if err != nil {
		return nil, err
	}
	out := make([]obj, 0, hi-lo)
	for _, it := range items[lo:hi] {
		out = append(out, render(it))
	}
	return out, nil
}

// writeList answers a list route with one page of items.
func writeList[T any](e *Emulator, w http.ResponseWriter, r *http.Request, items []T, render func(T) obj) {
	out, err := pageOf(e, w, r, items, render)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// sinceFilter reads the since query parameter of list routes; zero when absent.
func sinceFilter(r *http.Request, resource string) (time.Time, error) {
	s := r.URL.Query().Get("since")
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errValidation(resource, "since", "invalid", "since must be an ISO 8601 timestamp")
	}
	return t, nil
}

// stateFilter reads the state query parameter of issue and pull request lists.
func stateFilter(r *http.Request, resource string) (string, error) {
	state := r.URL.Query().Get("state")
	switch state {
	case "":
		return "open", nil
	case "open", "closed", "all":
		return state, nil
	}
	return "", errValidation(resource, "state", "invalid", "state must be open, closed or all")
}
