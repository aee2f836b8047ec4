package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/meter"
)

const logKeyGateway = "gateway"

// credentialHeaders are removed from every request before the real credential is added:
// whatever the VM sent (sentinel or not) never reaches an upstream.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Cookie", "Openai-Organization", "Openai-Project", "Anthropic-Admin-Api-Key"}

// call is one gateway request on its way through.
type call struct {
	g        *Gateway
	up       *upstream
	path     string // upstream path below the base, escaped
	setAuth  func(http.Header)
	meter    bool
	reason   string // why it was allowed, for the audit log
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
			if c.meter {
				// Let the transport negotiate compression and decode it, so the meter
				// reads plain JSON or SSE whatever the client asked for.
				out.Header.Del("Accept-Encoding")
			}
		},
		Transport:     c.g.transport,
		FlushInterval: -1, // model streams and git side-band progress go out as they come
		ModifyResponse: func(resp *http.Response) error {
			if c.meter && resp.StatusCode == http.StatusOK {
				resp.Body = meter.Body(resp.Body, resp.Header.Get("Content-Type"), func(u meter.Usage) {
					usd, known := c.g.cfg.Meter.Record(u)
					c.costUSD = usd
					c.usageMsg = usageNote(u, known)
				})
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			zerolog.Ctx(r.Context()).Warn().Str(logKeyGateway, c.up.name).Err(err).Msg("gateway upstream failed")
			http.Error(w, "bumper firewall: Bad Gateway: the "+c.up.name+" upstream failed: "+upstreamErr(r.Context(), err), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(cw, r)
	reason := c.reason
	if c.usageMsg != "" {
		reason += "; " + c.usageMsg
	}
	status := cw.status
	if status == 0 {
		status = http.StatusOK
	}
	c.g.record(r, &audit.Entry{Time: start, Kind: c.up.name, Target: r.URL.Path, Addr: c.up.base.Host,
		Allowed: true, Reason: reason, Status: status, BytesUp: in.n.Load(), BytesDn: cw.n, Duration: time.Since(start), CostUSD: c.costUSD})
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

// refuse answers a gateway request with an error and records it.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, kind string, status int, reason string) {
	g.record(r, &audit.Entry{Time: time.Now(), Kind: kind, Target: r.URL.Path, Reason: reason, Status: status})
	http.Error(w, "bumper firewall: "+http.StatusText(status)+": "+reason, status)
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
