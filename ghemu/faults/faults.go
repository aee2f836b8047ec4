package faults

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The kinds of faults, as Counts and the YAML name them.
const (
	BadGateway         Kind = "bad_gateway"
	Unavailable        Kind = "unavailable"
	SecondaryRateLimit Kind = "secondary_rate_limit"
	TooManyRequests    Kind = "too_many_requests"
	Race               Kind = "race"
	Delay              Kind = "latency"
	Drop               Kind = "drop"
	Duplicate          Kind = "duplicate"
)

// Kinds are every kind, in the order rates are drawn and reported.
var Kinds = []Kind{BadGateway, Unavailable, SecondaryRateLimit, TooManyRequests, Race, Delay, Drop, Duplicate}

// GitHub's words for the faults it answers.
const (
	msgBadGateway  = "Server Error"
	msgUnavailable = "No server is currently available to service your request. Sorry about that. " +
		"Please try resubmitting your request and contact us if the problem persists."
	msgSecondary = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. " +
		"For more on scraping GitHub and how it may affect your rights, please review our Terms of Service " +
		"(https://docs.github.com/en/site-policy/github-terms/github-terms-of-service) " +
		"If you reach out to GitHub Support for help, please include the request ID %s."
	// SecondaryDocsURL is the documentation_url of GitHub's secondary rate limit
	// answers; clients (go-github, octokit) recognise the limit by its fragment.
	SecondaryDocsURL  = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	defaultRetryAfter = 60
)

// Races are the 422s GitHub answers when another writer got there first, by route
// ("METHOD /template", as GitHub's description writes it): a rule's race rate applies
// on these routes only.
var Races = map[string]string{
	"POST /repos/{owner}/{repo}/git/refs":                         "Reference already exists",
	"PATCH /repos/{owner}/{repo}/git/refs/{ref}":                  "Update is not a fast forward",
	"DELETE /repos/{owner}/{repo}/git/refs/{ref}":                 "Reference does not exist",
	"PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch": "expected head sha didn’t match current head ref.",
}

// Options are what New needs besides the plan.
type Options struct {
	// Routes are the REST routes the emulator serves, "METHOD /template" (a rest
	// wildcard may be written "{ref...}"); a rule's template must be one of them.
	Routes []string
	// Now is the clock of the Retry-After memory; nil: time.Now.
	Now func() time.Time
}

// Faults decides the faults of a plan, request by request and delivery by delivery.
// A nil *Faults injects nothing and counts nothing.
type Faults struct {
	seed  uint64
	rest  []*restRule
	hooks []*hookRule
	now   func() time.Time

	mu         sync.Mutex
	counts     map[Kind]int
	delay      time.Duration
	retryUntil map[string]retryWindow
	early      []EarlyRetry
}

type restRule struct {
	RESTRule
	template string   // normalised template; empty for a glob
	glob     []string // the glob's segments
	methods  map[string]bool
	rng, lat *rand.Rand
}

type hookRule struct {
	WebhookRule
	rng *rand.Rand
}

// retryWindow is a credential's secondary rate limit: answered at told, in force until
// until. While pending, its answer has not been written out yet: the client cannot
// know of it, and told and until are estimates from the rule's latency.
type retryWindow struct {
	told, until time.Time
	pending     bool
	// writing is when the answer began to be written: the client can read it no
	// earlier, and may read it before Answered runs.
	writing time.Time
	// conn is the connection that carried the limited request (its client's address
	// and port).
	conn string
}

// inFlight is how long after a limit's answer was written a request of its credential
// on another connection may still have been sent before the client read that answer:
// the request was on its way, or waiting for a busy host to schedule the goroutine
// that reads it. On the limited request's own connection there is no such window:
// HTTP/1.1 answers a connection's requests in order, so its client had the answer
// before it sent the next one there.
const inFlight = 100 * time.Millisecond

// EarlyRetry is a request that came before the Retry-After its credential was given
// had run out.
type EarlyRetry struct {
	Credential string // a digest of the credential, never the credential
	Method     string
	Path       string
	// Early is how long before the Retry-After ran out the request came.
	Early time.Duration
}

// New checks the plan against the routes and prepares its random sources. A nil plan
// gives a Faults that injects nothing, but still has counts to read.
func New(c *Config, opts Options) (*Faults, error) {
	f := &Faults{now: opts.Now, counts: map[Kind]int{}, retryUntil: map[string]retryWindow{}}
	if f.now == nil {
		f.now = time.Now
	}
	if c == nil {
		c = &Config{}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.Seed != nil {
		f.seed = *c.Seed
	} else {
		f.seed = rand.Uint64()
	}
	routes := map[string]bool{}
	for _, r := range opts.Routes {
		routes[normalise(r)] = true
	}
	for i, r := range c.REST {
		at := where("rest", i, r.line)
		rr := &restRule{RESTRule: r, methods: map[string]bool{},
			rng: rand.New(rand.NewPCG(f.seed, uint64(2*i))), lat: rand.New(rand.NewPCG(f.seed, uint64(2*i+1)))}
		for _, m := range r.Methods {
			rr.methods[strings.ToUpper(m)] = true
		}
		if strings.Contains(r.Route, "{") {
			rr.template = normalise(r.Route)
			if len(routes) > 0 && !slices.ContainsFunc(keys(routes), func(k string) bool { _, t, _ := strings.Cut(k, " "); return t == rr.template }) {
				return nil, fmt.Errorf("%s: route %s is not one the emulator serves (docs/emulator-rest.md lists them)", at, r.Route)
			}
		} else {
			rr.glob = strings.Split(strings.Trim(r.Route, "/"), "/")
			for _, s := range rr.glob {
				if _, err := path.Match(s, ""); err != nil {
					return nil, fmt.Errorf("%s: route %s: %w", at, r.Route, err)
				}
			}
		}
		if r.Race > 0 && len(routes) > 0 {
			ok := false
			for route := range Races {
				method, tmpl, _ := strings.Cut(route, " ")
				if rr.matchesTemplate(method, tmpl) {
					ok = true
				}
			}
			if !ok {
				return nil, fmt.Errorf("%s: race: GitHub answers none of the routes this rule matches with a 422 race; it does on %s",
					at, strings.Join(keys(Races), ", "))
			}
		}
		f.rest = append(f.rest, rr)
	}
	for i, h := range c.Webhooks {
		f.hooks = append(f.hooks, &hookRule{WebhookRule: h, rng: rand.New(rand.NewPCG(f.seed, uint64(1<<32+i)))})
	}
	return f, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// normalise writes a template as GitHub's description does: "{ref...}" is "{ref}".
func normalise(s string) string { return strings.ReplaceAll(s, "...}", "}") }

// Seed is the seed the faults are drawn from: the plan's, or the random one chosen.
func (f *Faults) Seed() uint64 {
	if f == nil {
		return 0
	}
	return f.seed
}

// matchesTemplate reports whether the rule covers a route (for checking the plan).
func (r *restRule) matchesTemplate(method, template string) bool {
	if len(r.methods) > 0 && !r.methods[method] {
		return false
	}
	if r.template != "" {
		return r.template == template
	}
	return matchGlob(r.glob, strings.Split(strings.Trim(template, "/"), "/"))
}

func (r *restRule) matches(method, template, escapedPath string) bool {
	if len(r.methods) > 0 && !r.methods[method] && !(method == http.MethodHead && r.methods[http.MethodGet]) {
		return false
	}
	if r.template != "" {
		return r.template == normalise(template)
	}
	return matchGlob(r.glob, strings.Split(strings.Trim(escapedPath, "/"), "/"))
}

// matchGlob matches path segments: "**" takes any number of them, anything else one,
// as path.Match does.
func matchGlob(glob, parts []string) bool {
	if len(glob) == 0 {
		return len(parts) == 0
	}
	if glob[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if matchGlob(glob[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	if ok, _ := path.Match(glob[0], parts[0]); !ok {
		return false
	}
	return matchGlob(glob[1:], parts[1:])
}

// Fault is an answer that replaces a request's.
type Fault struct {
	Kind    Kind
	Status  int
	Message string
	// RetryAfter is the Retry-After of a 403 or 429, in seconds.
	RetryAfter int
}

// Decision is what becomes of one REST request.
type Decision struct {
	// Delay is the latency to add before it is served or faulted.
	Delay time.Duration
	// Fault, when not nil, is answered instead of serving the request; the request
	// then changes nothing.
	Fault *Fault
}

// Decide draws the fate of a REST request that matched route (method and template as
// the REST API registered it), and notes whether it came before a Retry-After it was
// given ran out. Decide counts every fault it decides but races: a race is answered
// only once the request is authorised, and whoever answers it counts it with Count.
func (f *Faults) Decide(r *http.Request, method, template string) Decision {
	if f == nil {
		return Decision{}
	}
	cred := Credential(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if win, ok := f.retryUntil[cred]; ok {
		switch {
		case win.pending || !now.After(win.told):
			// Sent before the limit's answer went out (its added latency, a busy host's
			// delay in writing it): the client could not know yet.
		case r.RemoteAddr != win.conn && now.Sub(win.told) < inFlight:
			// Sent, on another connection, while the answer was on its way to the client.
		case now.Before(win.until):
			f.early = append(f.early, EarlyRetry{Credential: cred, Method: r.Method, Path: r.URL.Path, Early: win.until.Sub(now)})
		default:
			delete(f.retryUntil, cred)
		}
	}
	var rule *restRule
	for _, rr := range f.rest {
		if rr.matches(method, template, r.URL.EscapedPath()) {
			rule = rr
			break
		}
	}
	if rule == nil {
		return Decision{}
	}
	var d Decision
	if rule.Latency.Max > 0 {
		d.Delay = rule.Latency.Min
		if span := rule.Latency.Max - rule.Latency.Min; span > 0 {
			d.Delay += time.Duration(rule.lat.Int64N(int64(span) + 1))
		}
		f.counts[Delay]++
		f.delay += d.Delay
	}
	u := rule.rng.Float64()
	retryAfter := rule.RetryAfter
	if retryAfter == 0 {
		retryAfter = defaultRetryAfter
	}
	for _, k := range []struct {
		kind Kind
		rate float64
	}{{BadGateway, rule.BadGateway}, {Unavailable, rule.Unavailable}, {SecondaryRateLimit, rule.SecondaryRateLimit},
		{TooManyRequests, rule.TooManyRequests}, {Race, rule.Race}} {
		if u >= k.rate {
			u -= k.rate
			continue
		}
		switch k.kind {
		case BadGateway:
			d.Fault = &Fault{Kind: k.kind, Status: http.StatusBadGateway, Message: msgBadGateway}
			f.counts[k.kind]++
		case Unavailable:
			d.Fault = &Fault{Kind: k.kind, Status: http.StatusServiceUnavailable, Message: msgUnavailable}
			f.counts[k.kind]++
		case SecondaryRateLimit, TooManyRequests:
			status := http.StatusForbidden
			if k.kind == TooManyRequests {
				status = http.StatusTooManyRequests
			}
			d.Fault = &Fault{Kind: k.kind, Status: status, Message: msgSecondary, RetryAfter: retryAfter}
			// The client hears of the limit once the answer is written, after the rule's
			// latency; Retry-After counts from then.
			told := now.Add(d.Delay)
			f.retryUntil[cred] = retryWindow{told: told, until: told.Add(time.Duration(retryAfter) * time.Second), pending: true, conn: r.RemoteAddr}
			f.counts[k.kind]++
		case Race:
			if msg, ok := Races[method+" "+normalise(template)]; ok {
				d.Fault = &Fault{Kind: Race, Status: http.StatusUnprocessableEntity, Message: msg}
			}
		}
		break
	}
	return d
}

// Writing notes that the rate limit fault decided for r is about to be written out:
// the client can hear of it from now on (perhaps before Answered runs, on a busy host),
// so its Retry-After counts from no later than now. Other faults change nothing.
func (f *Faults) Writing(r *http.Request, fault *Fault) {
	if f == nil || fault == nil || (fault.Kind != SecondaryRateLimit && fault.Kind != TooManyRequests) {
		return
	}
	cred := Credential(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if win, ok := f.retryUntil[cred]; ok && win.pending {
		win.writing = f.now()
		f.retryUntil[cred] = win
	}
}

// Answered notes that the rate limit fault decided for r was written out (heard), or
// never was (the client hung up during its latency). Until then the limit binds no
// request of its credential: the client cannot know of it. Once heard, its Retry-After
// counts from when the answer began to be written (Writing), or from when the rule's
// latency would have ended if that is later. Other faults change nothing.
func (f *Faults) Answered(r *http.Request, fault *Fault, heard bool) {
	if f == nil || fault == nil || (fault.Kind != SecondaryRateLimit && fault.Kind != TooManyRequests) {
		return
	}
	cred := Credential(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	win, ok := f.retryUntil[cred]
	if !ok || !win.pending {
		return
	}
	if !heard {
		delete(f.retryUntil, cred)
		return
	}
	at := win.writing
	if at.IsZero() {
		at = f.now()
	}
	told := win.told
	if at.After(told) {
		told = at
	}
	f.retryUntil[cred] = retryWindow{told: told, until: told.Add(time.Duration(fault.RetryAfter) * time.Second), conn: win.conn}
}

// Count counts a fault that was answered (see Decide).
func (f *Faults) Count(k Kind) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.counts[k]++
	f.mu.Unlock()
}

// Delivery draws the fate of a webhook delivery: Drop, Duplicate or "" (sent as
// usual). It counts what it decides.
func (f *Faults) Delivery(event, action string, redelivery bool) Kind {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hooks {
		if redelivery && !h.Redeliveries {
			continue
		}
		if len(h.Events) > 0 && !slices.Contains(h.Events, event) && !slices.Contains(h.Events, event+"."+action) {
			continue
		}
		u := h.rng.Float64()
		switch {
		case u < h.Drop:
			f.counts[Drop]++
			return Drop
		case u < h.Drop+h.Duplicate:
			f.counts[Duplicate]++
			return Duplicate
		}
		return ""
	}
	return ""
}

// Counts are the faults injected so far, by kind, for a soak's figures.
type Counts struct {
	ByKind map[Kind]int
	// Delay is the latency added in all.
	Delay time.Duration
	// EarlyRetries are the requests that came before their credential's Retry-After ran
	// out.
	EarlyRetries int
}

// Total is the number of faults injected, latency not included.
func (c Counts) Total() int {
	n := 0
	for k, v := range c.ByKind {
		if k != Delay {
			n += v
		}
	}
	return n
}

// Counts reads the counts.
func (f *Faults) Counts() Counts {
	c := Counts{ByKind: map[Kind]int{}}
	if f == nil {
		return c
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range f.counts {
		c.ByKind[k] = v
	}
	c.Delay, c.EarlyRetries = f.delay, len(f.early)
	return c
}

// EarlyRetries is the number of requests that came back before the Retry-After their
// credential was sent had run out (a well-behaved client makes none).
func (f *Faults) EarlyRetries() int { return f.Counts().EarlyRetries }

// EarlyRetryLog lists those requests, oldest first.
func (f *Faults) EarlyRetryLog() []EarlyRetry {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.early)
}

// Credential names the credential of a request for the Retry-After memory: a digest of
// its token, the App (any JWT it signed, by issuer), or the caller's address when it
// has none.
func Credential(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if h == "" {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		return "ip:" + host
	}
	scheme, cred, _ := strings.Cut(h, " ")
	cred = strings.TrimSpace(cred)
	if strings.EqualFold(scheme, "basic") {
		if raw, err := base64.StdEncoding.DecodeString(cred); err == nil {
			_, pass, _ := strings.Cut(string(raw), ":")
			cred = pass
		}
	}
	if parts := strings.Split(cred, "."); len(parts) == 3 {
		var claims struct {
			Iss any `json:"iss"`
		}
		if raw, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil && json.Unmarshal(raw, &claims) == nil && claims.Iss != nil {
			return fmt.Sprintf("app:%v", claims.Iss)
		}
	}
	sum := sha256.Sum256([]byte(cred))
	return "token:" + hex.EncodeToString(sum[:6])
}

// Write answers with the fault as GitHub does. requestID is the answer's
// X-GitHub-Request-Id, which the secondary rate limit's message quotes.
func (ft *Fault) Write(w http.ResponseWriter, requestID string) {
	body := map[string]string{"message": ft.Message}
	switch ft.Kind {
	case SecondaryRateLimit, TooManyRequests:
		body["message"] = fmt.Sprintf(ft.Message, requestID)
		body["documentation_url"] = SecondaryDocsURL
		w.Header().Set("Retry-After", strconv.Itoa(ft.RetryAfter))
	case Race:
		body["documentation_url"] = "https://docs.github.com/rest"
		body["status"] = strconv.Itoa(ft.Status)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(ft.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}

// markKey is the context key of a request's fault mark.
type markKey struct{}

// WithMark returns ctx able to carry the mark Mark sets: a checker of the emulator's
// answers uses it to tell a fault from a real answer.
func WithMark(ctx context.Context) context.Context {
	return context.WithValue(ctx, markKey{}, new(atomic.Bool))
}

// Mark notes, in a context WithMark made, that the request was answered with a fault.
func Mark(ctx context.Context) {
	if b, ok := ctx.Value(markKey{}).(*atomic.Bool); ok {
		b.Store(true)
	}
}

// Marked reports whether Mark was called on ctx.
func Marked(ctx context.Context) bool {
	b, ok := ctx.Value(markKey{}).(*atomic.Bool)
	return ok && b.Load()
}
