package appclient_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	gogithub "github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

const webhookSecret = "whsec_appclient_tests"

// serveEnv is `bumper serve` in process against a checked emulator, with signed
// webhooks between them, as the App's own tests run it.
type serveEnv struct {
	t   *testing.T
	ctx context.Context
	e   *ghemu.Emulator
	srv *app.Server
	hs  *httptest.Server
}

func newServeEnv(t *testing.T) *serveEnv {
	t.Helper()
	e := emutest.New(t, ghemu.Options{WebhookSecret: webhookSecret})
	ctx := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).WithContext(context.Background())
	cfg := app.DefaultConfig()
	cfg.GitHub.WebURL = e.BaseURL()
	cfg.GitHub.V3APIURL = e.BaseURL() + "/"
	cfg.GitHub.App.IntegrationID = e.AppID()
	cfg.GitHub.App.PrivateKey = string(e.AppKeyPEM())
	cfg.GitHub.App.WebhookSecret = webhookSecret
	cfg.Bumper.OIDCIssuer = e.OIDCIssuerURL()
	cfg.Bumper.RunTokenKey = hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	srv, err := app.New(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	e.SetWebhookURL(hs.URL + cfg.Server.WebhookPath)
	if _, err := srv.Rebuild(ctx); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	v := &serveEnv{t: t, ctx: ctx, e: e, srv: srv, hs: hs}
	t.Cleanup(func() {
		v.settle()
		hs.Close()
	})
	return v
}

// settle waits until the emulator delivered every webhook and serve handled it,
// including those serve's own writes caused.
func (v *serveEnv) settle() {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(v.ctx, 20*time.Second)
	defer cancel()
	for range 4 {
		if err := v.e.WaitWebhooks(ctx); err != nil {
			v.t.Fatalf("waiting for webhooks: %v", err)
		}
		if err := v.srv.Drain(ctx); err != nil {
			v.t.Fatalf("waiting for serve: %v", err)
		}
	}
}

func (v *serveEnv) maintainer() *gogithub.Client {
	c := gogithub.NewClient(nil).WithAuthToken(v.e.UserToken(ghemu.DefaultMaintainer))
	c.BaseURL, _ = url.Parse(v.e.BaseURL() + "/")
	return c
}

// approved opens an issue, labels it and approves it as the maintainer, through the
// emulator's API, and returns its number and the run serve dispatched.
func (v *serveEnv) approved(title string) (int, ghemu.RunInfo) {
	v.t.Helper()
	gh := v.maintainer()
	is, _, err := gh.Issues.Create(v.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo,
		&gogithub.IssueRequest{Title: &title, Body: gogithub.String("The widget count should be 4.")})
	if err != nil {
		v.t.Fatal(err)
	}
	n := is.GetNumber()
	if _, _, err := gh.Issues.AddLabelsToIssue(v.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, []string{"agent:implement"}); err != nil {
		v.t.Fatal(err)
	}
	v.settle()
	v.comment(n, "/approve")
	runs, err := v.e.Runs(ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil || len(runs) == 0 {
		v.t.Fatalf("no run dispatched for #%d: %v", n, err)
	}
	run := runs[len(runs)-1]
	if run.Inputs["work_item"] != fmt.Sprintf("%s/%s#%d", ghemu.DefaultOrg, ghemu.DefaultRepo, n) {
		v.t.Fatalf("the last run is not #%d's: %v", n, run.Inputs)
	}
	return n, run
}

func (v *serveEnv) comment(n int, body string) {
	v.t.Helper()
	if _, _, err := v.maintainer().Issues.CreateComment(v.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n,
		&gogithub.IssueComment{Body: &body}); err != nil {
		v.t.Fatal(err)
	}
	v.settle()
}

func (v *serveEnv) hasLabel(n int, want string) bool {
	v.t.Helper()
	is, _, err := v.maintainer().Issues.Get(v.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n)
	if err != nil {
		v.t.Fatal(err)
	}
	return slices.ContainsFunc(is.Labels, func(l *gogithub.Label) bool { return l.GetName() == want })
}

// oidcToken gets the run's ID token as `bumper run` does, from the request URL and token
// the emulator's runner gives it: the URL carries ?api-version=2.0, as GitHub's does.
func (v *serveEnv) oidcToken(run ghemu.RunInfo) string {
	v.t.Helper()
	tok, err := appclient.OIDCToken(v.ctx, run.OIDCRequestURL+"?api-version=2.0", run.OIDCRequestToken, wire.OIDCAudience, nil)
	if err != nil {
		v.t.Fatalf("OIDCToken: %v", err)
	}
	return tok
}

func exchangeRequest(run ghemu.RunInfo, tok string) wire.ExchangeRequest {
	at, _ := strconv.Atoi(run.Inputs["attempt"])
	return wire.ExchangeRequest{OIDCToken: tok, Nonce: run.Inputs["nonce"], WorkItem: run.Inputs["work_item"], Attempt: at}
}

func (v *serveEnv) client(base string, opts ...appclient.Option) *appclient.Client {
	v.t.Helper()
	c, err := appclient.New(base, append([]appclient.Option{appclient.WithRetry(3, 10*time.Millisecond)}, opts...)...)
	if err != nil {
		v.t.Fatal(err)
	}
	return c
}

// TestRunAgainstServe is a run's conversation with serve from its first step: the OIDC
// token, the exchange, the task, progress, should-stop before and after /stop, and the
// refusals on the way.
func TestRunAgainstServe(t *testing.T) {
	v := newServeEnv(t)
	n, run := v.approved("Make widgets 4")
	c := v.client(v.hs.URL)
	var granted wire.ExchangeResponse
	var rc *appclient.Client
	steps := []struct {
		name string
		do   func(t *testing.T)
	}{
		{"OIDC token for audience bumper", func(t *testing.T) {
			claims := jwt.MapClaims{}
			if _, _, err := jwt.NewParser().ParseUnverified(v.oidcToken(run), claims); err != nil {
				t.Fatal(err)
			}
			if aud, _ := claims.GetAudience(); !slices.Equal(aud, []string{wire.OIDCAudience}) || claims["run_id"] != strconv.FormatInt(run.ID, 10) {
				t.Fatalf("claims %v", claims)
			}
		}},
		{"exchange", func(t *testing.T) {
			resp, err := c.Exchange(v.ctx, exchangeRequest(run, v.oidcToken(run)))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Stage != "implement" || resp.Attempt != 1 || resp.Permissions["contents"] != "write" {
				t.Fatalf("response %+v", resp)
			}
			granted, rc = resp, c.WithRunToken(resp.RunToken)
		}},
		{"replayed nonce refused", func(t *testing.T) {
			_, err := c.Exchange(v.ctx, exchangeRequest(run, v.oidcToken(run)))
			var ref *appclient.Refused
			if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "already used") || !strings.HasPrefix(err.Error(), "exchange refused: ") {
				t.Fatalf("err %v", err)
			}
		}},
		{"task as approved", func(t *testing.T) {
			task, err := rc.Task(v.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if task.Title != "Make widgets 4" || task.WorkItem != granted.WorkItem || task.BaseCommit != granted.BaseCommit {
				t.Fatalf("task %+v", task)
			}
		}},
		{"progress verifying", func(t *testing.T) {
			if err := rc.Progress(v.ctx, wire.Progress{State: "verifying"}); err != nil {
				t.Fatal(err)
			}
			v.settle()
			if !v.hasLabel(n, ledger.Verifying.Label()) {
				t.Fatal("the item did not move to verifying")
			}
		}},
		{"a run token for another stage refused", func(t *testing.T) {
			err := rc.Verdict(v.ctx, wire.Verdict{Document: `{"verdict": "approve"}`, HeadCommit: strings.Repeat("a", 40)})
			var ref *appclient.Refused
			if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "implement run's token does not allow") || ref.Path != wire.PathVerdict {
				t.Fatalf("err %v", err)
			}
		}},
		{"should-stop false while verifying", func(t *testing.T) {
			if st, err := rc.ShouldStop(v.ctx); err != nil || st.Stop {
				t.Fatalf("should-stop %+v, %v", st, err)
			}
		}},
		{"a refreshed token works", func(t *testing.T) {
			r, err := rc.Refresh(v.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.RunTokenExpiresAt.Before(granted.RunTokenExpiresAt) {
				t.Fatalf("refresh %+v", r)
			}
			fresh := c.WithRunToken(r.RunToken)
			if st, err := fresh.ShouldStop(v.ctx); err != nil || st.Stop {
				t.Fatalf("should-stop with the refreshed token %+v, %v", st, err)
			}
			rc = fresh
		}},
		{"should-stop true after /stop", func(t *testing.T) {
			v.comment(n, "/stop")
			if st, err := rc.ShouldStop(v.ctx); err != nil || !st.Stop || st.Reason == "" {
				t.Fatalf("should-stop %+v, %v", st, err)
			}
		}},
		{"no new token once the run is over", func(t *testing.T) {
			_, err := rc.Refresh(v.ctx)
			var ref *appclient.Refused
			if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "run is over") {
				t.Fatalf("refresh after /stop: %v", err)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.do) {
			t.FailNow() // each step needs the one before
		}
	}
}

// flakyProxy stands in front of serve: it answers the next fail requests 502 itself,
// and with drop set it forwards the next request and then hangs up without answering.
type flakyProxy struct {
	fail atomic.Int32
	drop atomic.Bool
	hits atomic.Int32
	rp   *httputil.ReverseProxy
}

func (p *flakyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.hits.Add(1)
	if p.fail.Add(-1) >= 0 {
		http.Error(w, `{"error":"bad gateway"}`, http.StatusBadGateway)
		return
	}
	p.fail.Store(0)
	if p.drop.CompareAndSwap(true, false) {
		rec := httptest.NewRecorder()
		p.rp.ServeHTTP(rec, r) // serve takes it …
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close() // … and its answer is lost
		}
		return
	}
	p.rp.ServeHTTP(w, r)
}

// TestServeFailures: what is repeated and what is not when serve is down, failing or
// its answer is lost, and what the run is told.
func TestServeFailures(t *testing.T) {
	v := newServeEnv(t)
	target, _ := url.Parse(v.hs.URL)
	proxy := &flakyProxy{rp: httputil.NewSingleHostReverseProxy(target)}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	flaky := v.client(ps.URL)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	down := v.client(closed)

	n1, run1 := v.approved("First")
	_, run2 := v.approved("Second")
	var rc *appclient.Client // issue 1's run token, through the flaky proxy

	cases := []struct {
		name     string
		fail     int32 // 502s the proxy answers first
		drop     bool  // the proxy loses serve's answer
		call     func() error
		hits     int32 // requests the proxy saw
		wantErr  string
		wantType any
	}{
		{name: "serve down: exchange unreachable after retries", call: func() error {
			_, err := down.Exchange(v.ctx, exchangeRequest(run1, v.oidcToken(run1)))
			return err
		}, wantErr: "serve unreachable at " + closed + " (3 attempts)", wantType: new(*appclient.Unreachable)},
		{name: "serve down: should-stop unreachable after retries", call: func() error {
			_, err := down.WithRunToken("x").ShouldStop(v.ctx)
			return err
		}, wantErr: "serve unreachable at " + closed + " (3 attempts)", wantType: new(*appclient.Unreachable)},
		{name: "exchange 502 not repeated", fail: 1, hits: 1, call: func() error {
			_, err := flaky.Exchange(v.ctx, exchangeRequest(run1, v.oidcToken(run1)))
			return err
		}, wantErr: "serve failed the token exchange (502 Bad Gateway)", wantType: new(*appclient.StatusError)},
		{name: "exchange after the 502: the nonce was not spent", hits: 1, call: func() error {
			resp, err := flaky.Exchange(v.ctx, exchangeRequest(run1, v.oidcToken(run1)))
			rc = flaky.WithRunToken(resp.RunToken)
			return err
		}},
		{name: "task after two 502s", fail: 2, hits: 3, call: func() error {
			_, err := rc.Task(v.ctx)
			return err
		}},
		{name: "should-stop 502 every time: unreachable", fail: 3, hits: 3, call: func() error {
			_, err := rc.ShouldStop(v.ctx)
			return err
		}, wantErr: "(3 attempts): serve answered /api/v1/run/should-stop with 502 Bad Gateway", wantType: new(*appclient.Unreachable)},
		{name: "progress after a 502", fail: 1, hits: 2, call: func() error {
			err := rc.Progress(v.ctx, wire.Progress{State: "verifying"})
			v.settle()
			if err == nil && !v.hasLabel(n1, ledger.Verifying.Label()) {
				return errors.New("the item did not move to verifying")
			}
			return err
		}},
		{name: "lost answer to a report not repeated", drop: true, hits: 1, call: func() error {
			_, err := rc.Evidence(v.ctx, wire.Evidence{Digest: "sha256:" + strings.Repeat("0", 64)})
			return err
		}, wantErr: "serve may have taken it"},
		{name: "lost answer to an exchange not repeated", drop: true, hits: 1, call: func() error {
			_, err := flaky.Exchange(v.ctx, exchangeRequest(run2, v.oidcToken(run2)))
			return err
		}, wantErr: "the nonce is single-use and may be spent"},
		{name: "which is why: the nonce was spent", hits: 1, call: func() error {
			_, err := flaky.Exchange(v.ctx, exchangeRequest(run2, v.oidcToken(run2)))
			return err
		}, wantErr: "exchange refused: ", wantType: new(*appclient.Refused)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy.hits.Store(0)
			proxy.fail.Store(tc.fail)
			proxy.drop.Store(tc.drop)
			err := tc.call()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			case tc.wantType != nil && !errors.As(err, tc.wantType):
				t.Fatalf("err %T %v, want %T", err, err, tc.wantType)
			case proxy.hits.Load() != tc.hits:
				t.Fatalf("the proxy saw %d requests, want %d", proxy.hits.Load(), tc.hits)
			}
		})
	}
}
