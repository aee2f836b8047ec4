package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/meter"
	"github.com/bumperdev/bumper/internal/denied"
)

const logKeyGateway = "gateway"

// credentialHeaders are removed from every request before the real credential is added:
// whatever the VM sent (sentinel or not) never reaches an upstream.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Cookie", "Openai-Organization", "Openai-Project", "Anthropic-Admin-Api-Key"}

// call is one gateway request on its way through.
type call struct {
	g       *Gateway
	up      *upstream
	path    string // upstream path below the base, escaped
	setAuth func(http.Header)
	reason  string // why it was allowed, for the audit log
	// charge, when set, is the budget reservation of a call that generates tokens: its
	// response is metered and the reservation settled once, to what the call reported or
	// else its worst case, or released when nothing was generated.
	charge *meter.Reservation

	wrote    atomic.Bool // the request's headers went to the upstream
	mu       sync.Mutex
	settled  bool
	costUSD  float64
	usageMsg string
}

// forward proxies r to c.up and records the outcome.
func (c *call) forward(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	in := &countingBody{rc: r.Body}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = in
	}
	if c.charge != nil {
		// Whether the request left the firewall decides whether a call that got no
		// response is charged: the upstream may be generating for a client that hung up.
		r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
			WroteHeaders: func() { c.wrote.Store(true) },
		}))
	}
	cw := &countingWriter{ResponseWriter: w}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme = c.up.base.Scheme
			out.URL.Host = c.up.base.Host
			out.URL.Path = c.up.base.Path + mustUnescape(c.path)
			out.URL.RawPath = c.up.base.EscapedPath() + c.path
			out.URL.RawQuery = r.URL.RawQuery
			out.Host = ""
			for _, h := range credentialHeaders {
				out.Header.Del(h)
			}
			c.setAuth(out.Header)
			if c.charge != nil {
				// Let the transport negotiate compression and decode it, so the meter
				// reads plain JSON or SSE whatever the client asked for.
				out.Header.Del("Accept-Encoding")
			}
		},
		Transport:     c.g.transport,
		FlushInterval: -1, // model streams and git side-band progress go out as they come
		ModifyResponse: func(resp *http.Response) error {
			if c.charge != nil {
				// Every status is metered: an error body may carry usage, and one that
				// carries none is charged the worst case like any other.
				status := resp.StatusCode
				body := &countingBody{rc: resp.Body}
				resp.Body = meter.Body(body, resp.Header.Get("Content-Type"), func(u meter.Usage) {
					c.settle(u, notGenerated(status, body.n.Load()))
				})
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			zerolog.Ctx(r.Context()).Warn().Str(logKeyGateway, c.up.name).Err(err).Msg("gateway upstream failed")
			w.Header().Set("X-Bumper-Firewall", "refused")
			w.Header().Set(denied.Header, string(denied.Unreachable))
			http.Error(w, "bumper firewall: 502 unreachable: the "+c.up.name+" upstream failed: "+upstreamErr(r.Context(), err), http.StatusBadGateway)
		},
	}
	// Recorded in a defer: ReverseProxy panics with http.ErrAbortHandler when a response
	// breaks off mid-way, and such a call must be charged and audited all the same.
	defer func() {
		p := recover()
		if c.charge != nil {
			if c.wrote.Load() {
				c.settle(meter.Usage{}, false) // no-op when the response was metered
			} else {
				c.settleUnsent()
			}
		}
		reason := c.reason
		if c.usageMsg != "" {
			reason += "; " + c.usageMsg
		}
		if p != nil {
			reason += "; the response broke off"
		}
		status := cw.status
		if status == 0 {
			status = http.StatusOK
		}
		c.g.record(r, &audit.Entry{Time: start, Kind: c.up.name, Target: r.URL.Path, Addr: c.up.base.Host,
			Allowed: true, Reason: reason, Status: status, BytesUp: in.n.Load(), BytesDn: cw.n, Duration: time.Since(start), CostUSD: c.costUSD})
		if p != nil {
			panic(p)
		}
	}()
	rp.ServeHTTP(cw, r)
}

// maxRefusalBody bounds the body of a rate-limit or overload answer that is taken as
// "nothing was generated"; the APIs' own error objects are a few hundred bytes.
const maxRefusalBody = 4096

// notGenerated says whether a response shows that the model generated nothing: an error
// without a body, or a short rate-limit (429) or overload (529) answer. Neither API bills
// those, and charging each one a worst case would let a few retries of an overloaded
// API spend a run's budget.
func notGenerated(status int, bodyBytes int64) bool {
	switch {
	case status == http.StatusOK:
		return false
	case bodyBytes == 0:
		return true
	case status == http.StatusTooManyRequests || status == 529:
		return bodyBytes <= maxRefusalBody
	}
	return false
}

// settle charges the call once: its reservation is replaced by what it cost.
// emptyError is a non-200 response without a body (or a short rate-limit or overload
// answer): the upstream refused the call before generating anything, so it costs nothing
// and its reservation is released.
func (c *call) settle(u meter.Usage, emptyError bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settled {
		return
	}
	c.settled = true
	if !u.Complete && emptyError {
		c.charge.Release()
		c.usageMsg = "not charged: an error response without a body, or a short rate-limit or overload answer (nothing was generated)"
		return
	}
	ch := c.charge.Settle(u)
	c.costUSD = ch.USD
	if ch.Estimated {
		c.usageMsg = estimateNote(ch, u)
	} else {
		c.usageMsg = usageNote(u, ch.Known)
	}
	c.usageMsg += " (held $" + strconv.FormatFloat(ch.ReservedUSD, 'f', 4, 64) + " while in flight)"
}

// settleUnsent notes a call that never reached the upstream (it failed to connect or to
// verify TLS): nothing was generated, nothing is charged, its reservation is released.
func (c *call) settleUnsent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.settled {
		c.settled = true
		c.charge.Release()
		c.usageMsg = "not charged: the request never reached the upstream"
	}
}

func usageNote(u meter.Usage, known bool) string {
	s := "model " + u.Model + " in=" + strconv.FormatInt(u.Input, 10) + " out=" + strconv.FormatInt(u.Output, 10) +
		" cache_write=" + strconv.FormatInt(u.CacheWrite, 10) + " cache_read=" + strconv.FormatInt(u.CacheRead, 10)
	if !known {
		s += " (model not in the price table: default price)"
	}
	if !u.Complete {
		s += " (stream ended before the final usage)"
	}
	return s
}

func estimateNote(ch meter.Charge, seen meter.Usage) string {
	s := "model " + ch.Usage.Model + " estimated worst case in=" + strconv.FormatInt(ch.Usage.Input, 10) +
		" out=" + strconv.FormatInt(ch.Usage.Output, 10) + " (the response carried no final usage"
	if seen.Input > 0 || seen.Output > 0 {
		s += "; it showed in=" + strconv.FormatInt(seen.Input, 10) + " out=" + strconv.FormatInt(seen.Output, 10) + " before it ended"
	}
	s += ")"
	if !ch.Known {
		s += " (model not in the price table: default price and limits)"
	}
	return s
}

// upstreamErr describes a transport failure without anything that could carry a secret.
func upstreamErr(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil:
		return "the client went away"
	case strings.Contains(err.Error(), "x509"), strings.Contains(err.Error(), "tls"):
		return "TLS verification of the upstream failed"
	default:
		return "could not reach it or it broke the connection"
	}
}

func mustUnescape(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// refuse answers a gateway request with an error and records it; its kind of refusal
// is the gateway's own (deniedKind).
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, kind string, status int, reason string) {
	g.refuseAs(w, r, kind, deniedKind(kind, status), status, reason)
}

// refuseAs answers a gateway request with an error of kind dk and records it. The
// gateway is reached by its path on the firewall's own address, so there is no host to
// name: the reason phrase and the X-Bumper-Denied header carry the kind alone.
func (g *Gateway) refuseAs(w http.ResponseWriter, r *http.Request, kind string, dk denied.Kind, status int, reason string) {
	g.record(r, &audit.Entry{Time: time.Now(), Kind: kind, Target: r.URL.Path, Reason: reason, Status: status, Denied: string(dk)})
	body := "bumper firewall: " + strconv.Itoa(status) + " " + string(dk) + ": " + reason
	if hint := denied.Hint(dk, "", 0); hint != "" {
		body += "; " + hint
	}
	w.Header().Set("X-Bumper-Firewall", "refused")
	w.Header().Set(denied.Header, string(dk))
	http.Error(w, body, status)
}

// deniedKind is the kind of a gateway's refusal: a request that does not parse is
// malformed, a path no gateway serves too; anything else is the gateway's own.
func deniedKind(gateway string, status int) denied.Kind {
	switch {
	case status == http.StatusBadRequest:
		return denied.Malformed
	case gateway == "git":
		return denied.Git
	case gateway == "github-api":
		return denied.GitHubAPI
	case gateway == "anthropic" || gateway == "openai":
		return denied.Model
	}
	return denied.Malformed
}

func (g *Gateway) record(r *http.Request, e *audit.Entry) {
	e.Client = r.RemoteAddr
	e.Method = r.Method
	if err := g.cfg.Audit.Write(e); err != nil {
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("audit write failed")
	}
}

type countingBody struct {
	rc io.ReadCloser
	n  atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error { return b.rc.Close() }

// countingWriter records the status and the body bytes written; it keeps Flush working
// for streamed responses.
type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
