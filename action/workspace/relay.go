package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// relay is the git client's only server: a loopback reverse proxy in front of the
// firewall's git gateway that passes the read side of smart HTTP for one repository and
// nothing else, refuses redirects, and cuts the transfer once the responses exceed a
// byte budget, so a repository too large for the run fails with a clear error instead
// of filling the disk. The gateway, behind it, adds the token and audits each request.
type relay struct {
	srv      *http.Server
	ln       net.Listener
	url      string // what git fetches from: http://127.0.0.1:port/git/owner/repo.git
	received atomic.Int64
	max      int64
	exceeded atomic.Bool

	mu       sync.Mutex
	refusals []string
}

// quiet drops the HTTP packages' own log lines: failures reach the caller as errors.
var quiet = log.New(io.Discard, "", 0)

// errBudget breaks off a response that went over the relay's byte budget.
var errBudget = errors.New("fetch byte budget exceeded")

func startRelay(gateway *url.URL, max int64) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failed to listen on loopback for the fetch: %w", err)
	}
	r := &relay{ln: ln, max: max, url: "http://" + ln.Addr().String() + gateway.Path}
	transport := &http.Transport{
		Proxy:                 nil, // straight to the gateway, whatever the environment says
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: 5 * time.Minute,
		MaxIdleConnsPerHost:   4,
		DisableCompression:    true, // git negotiates its own encodings
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = gateway.Scheme
			pr.Out.URL.Host = gateway.Host
			pr.Out.Host = ""
			// Git sends no credential here; make sure none goes up either way.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorLog:      quiet,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode >= 300 && resp.StatusCode < 400 {
				return fmt.Errorf("the gateway answered %s (a redirect to %q); redirects are refused", resp.Status, resp.Header.Get("Location"))
			}
			if resp.StatusCode >= 400 {
				// Keep what the gateway said (its refusals name the reason); git only
				// prints the status.
				head, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				r.note(fmt.Sprintf("the gateway answered %s: %s", resp.Status, strings.TrimSpace(string(head))))
				resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
			}
			resp.Body = &budgetBody{rc: resp.Body, r: r}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			if errors.Is(err, errBudget) || errors.Is(err, context.Canceled) {
				panic(http.ErrAbortHandler) // break the connection: git must not see a complete answer
			}
			r.refuse(w, http.StatusBadGateway, "bumper workspace relay: "+err.Error())
		},
	}
	allowed := map[string]string{
		gateway.Path + "/info/refs":       http.MethodGet,
		gateway.Path + "/git-upload-pack": http.MethodPost,
	}
	r.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			method, ok := allowed[req.URL.Path]
			switch {
			case !ok || req.Method != method:
				r.refuse(w, http.StatusForbidden, fmt.Sprintf("%s %s is not a fetch of %s", req.Method, req.URL.Path, gateway.Path))
				return
			case req.URL.Path == gateway.Path+"/info/refs" && req.URL.RawQuery != "service=git-upload-pack":
				r.refuse(w, http.StatusForbidden, "only service=git-upload-pack is served")
				return
			case req.URL.Path != gateway.Path+"/info/refs" && req.URL.RawQuery != "":
				r.refuse(w, http.StatusForbidden, "no query is served on "+req.URL.Path)
				return
			}
			if r.exceeded.Load() {
				panic(http.ErrAbortHandler)
			}
			rp.ServeHTTP(w, req)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          quiet,
	}
	go r.srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on close
	return r, nil
}

func (r *relay) refuse(w http.ResponseWriter, status int, msg string) {
	r.note(msg)
	http.Error(w, msg, status)
}

// note keeps a refusal (the relay's or the gateway's) for the error message.
func (r *relay) note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.refusals) < 8 {
		r.refusals = append(r.refusals, msg)
	}
}

// refused lists what the relay and the gateway refused, for error messages.
func (r *relay) refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

func (r *relay) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil {
		r.srv.Close()
	}
}

// budgetBody counts a response's bytes against the relay's budget.
type budgetBody struct {
	rc io.ReadCloser
	r  *relay
}

func (b *budgetBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.r.received.Add(int64(n)) > b.r.max {
		b.r.exceeded.Store(true)
		return 0, errBudget
	}
	return n, err
}

func (b *budgetBody) Close() error { return b.rc.Close() }

type readCloser struct {
	io.Reader
	io.Closer
}
