// Package rest is the emulator's REST API: GitHub's routes over the world (package
// state), with GitHub's authentication (App JWTs, installation tokens, personal
// tokens), authorization, rate limits, ETags, pagination and error shapes; and the
// rules git over HTTP shares with it (who may fetch and push, protected branches,
// workflow files), which the git server asks through GitRules.
//
// Concurrency: a request is served inside one state.Store.Do, from authentication to
// the last webhook it emits, as one transaction; the answer is written to the client
// after the lock is let go. Some routes run git while they hold it (reading refs and
// files, merging): the world and its git repositories change together. The rate
// limiter has its own lock, taken inside Do.
package rest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/actions"
	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/conversation"
	"github.com/bumperdev/bumper/ghemu/faults"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/ghemu/webhook"
)

// obj is a rendered GitHub object.
type obj = render.Obj

// API serves the REST routes.
type API struct {
	store   *state.Store
	git     *gitserver.Server
	hooks   *webhook.Sender
	actions *actions.Actions
	commits *render.Commits
	conv    *conversation.Service
	log     zerolog.Logger
	routes  router
	limits  *limiter
	faults  *faults.Faults
}

// Options configure New.
type Options struct {
	Store   *state.Store
	Git     *gitserver.Server
	Hooks   *webhook.Sender
	Actions *actions.Actions
	Commits *render.Commits
	// Conversation does what the routes of comments, reviews, threads, merges and ref
	// moves ask, as it does for the web view.
	Conversation *conversation.Service
	// RateLimit is the hourly request budget of each credential; 0: GitHub's 5000.
	RateLimit int
	// Now is the rate limiter's clock; nil: time.Now.
	Now    func() time.Time
	Logger zerolog.Logger
	// Faults, when set, answers some requests with GitHub's faults instead of serving
	// them, and delays some (package faults).
	Faults *faults.Faults
}

// New is the REST API over opts.Store.
func New(opts Options) *API {
	a := &API{store: opts.Store, git: opts.Git, hooks: opts.Hooks, actions: opts.Actions,
		commits: opts.Commits, conv: opts.Conversation, log: opts.Logger, limits: newLimiter(opts.RateLimit, opts.Now),
		faults: opts.Faults}
	a.register()
	return a
}

// call is one matched REST request, served inside the store's transaction.
type call struct {
	a      *API
	st     *state.World
	rn     *render.Renderer
	params map[string]string
	who    *principal
	repo   *state.Repo
}

// emit sends a webhook of what the call did (webhook.Sender.Emit).
func (c *call) emit(event, action string, rp *state.Repo, sender string, body obj) {
	c.a.hooks.Emit(c.st, event, action, rp, sender, body)
}

// ServeHTTP serves one REST request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, params := a.routes.match(r.Method, r.URL.EscapedPath())
	if rt == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	// A fault is decided before anything is served, and a faulted request changes
	// nothing; its latency is waited out before the state lock is taken.
	fate := a.faults.Decide(r, rt.method, rt.template)
	if fate.Delay > 0 {
		t := time.NewTimer(fate.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			a.faults.Answered(r, fate.Fault, false)
			return
		}
	}
	if f := fate.Fault; f != nil && f.Kind != faults.Race {
		faults.Mark(r.Context())
		// A rate limit's Retry-After counts from when the client can read it: from the
		// start of the write, and it binds once the answer is out.
		a.faults.Writing(r, f)
		f.Write(w, w.Header().Get("X-GitHub-Request-Id"))
		_ = http.NewResponseController(w).Flush()
		a.faults.Answered(r, f, true)
		return
	}
	out := &recorder{header: http.Header{}}
	a.store.Do(func(st *state.World) { a.serve(out, r, st, rt, params, fate.Fault) })
	out.flush(w)
}

// serve is one request's transaction: everything it answers goes to out. race, when
// not nil, is the 422 a concurrent writer would have caused: answered once the
// request is authorised, instead of serving it.
func (a *API) serve(out *recorder, r *http.Request, st *state.World, rt *route, params map[string]string, race *faults.Fault) {
	who, err := authenticate(st, r)
	if err != nil {
		apierr.Write(out, err)
		return
	}
	c := &call{a: a, st: st, rn: render.New(st, a.commits), params: params, who: who}
	if owner, ok := params["owner"]; ok {
		c.repo = st.Repo(owner, params["repo"])
		if c.repo == nil {
			if err := authorize(st, who, need{auth: rt.need.auth}, nil); err != nil {
				apierr.Write(out, err)
				return
			}
			apierr.Write(out, apierr.NotFound())
			return
		}
	}
	if err := authorize(st, who, rt.need, c.repo); err != nil {
		apierr.Write(out, err)
		return
	}
	counted := rt.need.auth != authNone
	if counted {
		if win := a.limits.window(who, r); win.used >= win.limit {
			win.setHeaders(out.Header())
			apierr.Write(out, apierr.New(http.StatusForbidden, "API rate limit exceeded for "+rateKeyLabel(who)+"."))
			return
		}
	}
	rw := &recorder{header: http.Header{}}
	if race != nil {
		a.faults.Count(faults.Race)
		faults.Mark(r.Context())
		apierr.Write(rw, apierr.Unprocessable(race.Message))
	} else {
		rt.handler(rw, r, c)
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	a.finish(out, r, rw, who, counted)
}

// finish applies GitHub's response conventions: rate-limit headers (a conditional GET
// answered 304 does not count against the limit, as on GitHub) and ETags.
func (a *API) finish(w http.ResponseWriter, r *http.Request, rw *recorder, who *principal, counted bool) {
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
		win := a.limits.spend(who, r, notModified)
		win.setHeaders(w.Header())
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

// recorder buffers a response: a handler's, so ETags and rate limits can be applied
// after it, and the whole answer, so it is written to the client once the state lock
// is let go.
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

// flush writes the recorded answer to w.
func (r *recorder) flush(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	if r.body.Len() > 0 {
		_, _ = w.Write(r.body.Bytes())
	}
}

// page applies GitHub's pagination (page, per_page up to 100, default 30) to n items
// and sets the Link header, with URLs under base. It returns the half-open range to
// serve.
func page(w http.ResponseWriter, r *http.Request, base string, n int) (int, int, error) {
	q := r.URL.Query()
	per := 30
	if s := q.Get("per_page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0, 0, apierr.Validation("", "per_page", "invalid", "per_page must be a positive integer")
		}
		per = min(v, 100)
	}
	pg := 1
	if s := q.Get("page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0, 0, apierr.Validation("", "page", "invalid", "page must be a positive integer")
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

// pageOf renders one page of items (see page); the caller wraps or writes the result.
func pageOf[T any](c *call, w http.ResponseWriter, r *http.Request, items []T, render func(T) obj) ([]obj, error) {
	lo, hi, err := page(w, r, c.st.BaseURL(), len(items))
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
func writeList[T any](c *call, w http.ResponseWriter, r *http.Request, items []T, render func(T) obj) {
	out, err := pageOf(c, w, r, items, render)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, out)
}

// sinceFilter reads the since query parameter of list routes; zero when absent.
func sinceFilter(r *http.Request, resource string) (time.Time, error) {
	s := r.URL.Query().Get("since")
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, apierr.Validation(resource, "since", "invalid", "since must be an ISO 8601 timestamp")
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
	return "", apierr.Validation(resource, "state", "invalid", "state must be open, closed or all")
}
