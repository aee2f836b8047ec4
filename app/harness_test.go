package app

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

const (
	testSecret      = "whsec_bumper_app_tests"
	testRunTokenKey = "0123456789abcdef0123456789abcdef"
)

// harness runs `serve` in process against a checked emulator, with real signed
// webhooks between them.
type harness struct {
	t     testing.TB
	ctx   context.Context
	e     *ghemu.Emulator
	cfg   Config
	srv   *Server
	hs    *httptest.Server
	calls atomic.Int64
	// rewrite changes serve's requests to GitHub while set.
	rewrite atomic.Pointer[func(*http.Request) *http.Request]
	logs    *lockedBuffer
	// sealer checks status records with serve's key, as serve does.
	sealer *ledger.Sealer
}

// lockedBuffer keeps serve's log lines for tests that check the audit trail.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countingTransport counts every request that reaches GitHub (below the cache), and
// has rewrite, when set, change it first (tests that make GitHub refuse a write).
type countingTransport struct {
	n       *atomic.Int64
	rewrite *atomic.Pointer[func(*http.Request) *http.Request]
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if f := c.rewrite.Load(); f != nil {
		r = (*f)(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func newHarness(t testing.TB, seed *ghemu.Seed) *harness {
	t.Helper()
	return newHarnessOpts(t, ghemu.Options{Seed: seed})
}

// newHarnessOpts is newHarness with the emulator's options (its clock, say); the
// webhook secret is the harness's.
func newHarnessOpts(t testing.TB, opts ghemu.Options) *harness {
	t.Helper()
	opts.WebhookSecret = testSecret
	e := emutest.New(t, opts)
	logs := &lockedBuffer{}
	log := zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), logs)).Level(zerolog.InfoLevel)
	if _, ok := t.(*testing.B); ok {
		log = zerolog.Nop()
	}
	h := &harness{t: t, ctx: log.WithContext(context.Background()), e: e, logs: logs}
	cfg := DefaultConfig()
	cfg.GitHub.WebURL = e.BaseURL()
	cfg.GitHub.V3APIURL = e.BaseURL() + "/"
	cfg.GitHub.App.IntegrationID = e.AppID()
	cfg.GitHub.App.PrivateKey = string(e.AppKeyPEM())
	cfg.GitHub.App.WebhookSecret = testSecret
	cfg.Bumper.OIDCIssuer = e.OIDCIssuerURL()
	cfg.Bumper.RunTokenKey = hex.EncodeToString([]byte(testRunTokenKey))
	cfg.Bumper.AttestationKeyFile = attestationKeyFile(t)
	h.cfg = cfg
	sealer, err := ledger.NewSealer([]byte(testRunTokenKey))
	if err != nil {
		t.Fatal(err)
	}
	h.sealer = sealer
	h.start()
	t.Cleanup(h.stop)
	return h
}

// start runs a fresh `serve` (empty memory) and rebuilds its ledger from GitHub.
func (h *harness) start() {
	h.t.Helper()
	srv, err := New(h.ctx, h.cfg, Options{Transport: countingTransport{&h.calls, &h.rewrite}})
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	h.srv = srv
	h.hs = newTestServer(srv)
	h.e.SetWebhookURL(h.hs.URL + h.cfg.Server.WebhookPath)
	if _, err := srv.Rebuild(h.ctx); err != nil {
		h.t.Fatalf("Rebuild: %v", err)
	}
}

// stop kills `serve`: its memory is gone; only GitHub remembers.
func (h *harness) stop() {
	if h.hs == nil {
		return
	}
	h.settle()
	h.hs.Close()
	h.hs = nil
}

// restart kills `serve` and starts a new one.
func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

// settle waits until the emulator has delivered everything and `serve` handled it,
// including the webhooks serve's own writes caused.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	for i := 0; i < 6; i++ {
		if err := h.e.WaitWebhooks(ctx); err != nil {
			h.t.Fatalf("waiting for webhooks: %v", err)
		}
		if err := h.srv.Drain(ctx); err != nil {
			h.t.Fatalf("waiting for serve: %v", err)
		}
	}
}

func (h *harness) user(login string) *gogithub.Client {
	c := gogithub.NewClient(nil).WithAuthToken(h.e.UserToken(login))
	c.BaseURL = mustURL(h.e.BaseURL() + "/")
	return c
}

func (h *harness) appClient() *gogithub.Client {
	tr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, h.e.AppID(), h.e.AppKeyPEM())
	if err != nil {
		h.t.Fatal(err)
	}
	tr.BaseURL = h.e.BaseURL()
	c := gogithub.NewClient(&http.Client{Transport: tr})
	c.BaseURL = mustURL(h.e.BaseURL() + "/")
	return c
}

func (h *harness) openIssue(title, body string) int {
	h.t.Helper()
	is, _, err := h.user(ghemu.DefaultMaintainer).Issues.Create(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo,
		&gogithub.IssueRequest{Title: &title, Body: &body})
	if err != nil {
		h.t.Fatalf("create issue: %v", err)
	}
	return is.GetNumber()
}

func (h *harness) label(who string, n int, label string) {
	h.t.Helper()
	if _, _, err := h.user(who).Issues.AddLabelsToIssue(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, []string{label}); err != nil {
		h.t.Fatalf("label: %v", err)
	}
	h.settle()
}

func (h *harness) comment(who string, n int, body string) {
	h.t.Helper()
	if _, _, err := h.user(who).Issues.CreateComment(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n,
		&gogithub.IssueComment{Body: &body}); err != nil {
		h.t.Fatalf("comment: %v", err)
	}
	h.settle()
}

func (h *harness) editIssue(n int, body string) {
	h.t.Helper()
	if _, _, err := h.user(ghemu.DefaultMaintainer).Issues.Edit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n,
		&gogithub.IssueRequest{Body: &body}); err != nil {
		h.t.Fatalf("edit issue: %v", err)
	}
	h.settle()
}

// stateLabels are the issue's bumper:* labels as GitHub has them.
func (h *harness) stateLabels(n int) []string {
	h.t.Helper()
	is, _, err := h.user(ghemu.DefaultMaintainer).Issues.Get(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, l := range is.Labels {
		if strings.HasPrefix(l.GetName(), ledger.LabelPrefix) {
			out = append(out, l.GetName())
		}
	}
	return out
}

// comments lists the issue's comments as author: first line.
func (h *harness) comments(n int) []*gogithub.IssueComment {
	h.t.Helper()
	cs, _, err := h.user(ghemu.DefaultMaintainer).Issues.ListComments(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n,
		&gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}})
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

// record reads the work item's record from GitHub (not from serve's memory).
func (h *harness) record(n int) *ledger.Record {
	h.t.Helper()
	var found []*ledger.Record
	for _, c := range h.comments(n) {
		if ledger.IsStatusComment(c.GetBody()) && c.GetUser().GetLogin() == ghemu.DefaultAppSlug+"[bot]" {
			r, err := h.sealer.Decode(c.GetBody())
			if err != nil {
				h.t.Fatalf("status comment does not decode: %v", err)
			}
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		h.t.Fatalf("%d status comments, want 1", len(found))
	}
	return found[0]
}

// expectState checks the label and the record agree on the state.
func (h *harness) expectState(n int, want ledger.State) *ledger.Record {
	h.t.Helper()
	labels := h.stateLabels(n)
	if len(labels) != 1 || labels[0] != want.Label() {
		h.t.Fatalf("state labels %v, want [%s]", labels, want.Label())
	}
	r := h.record(n)
	if r.State != want {
		h.t.Fatalf("record state %s, want %s (reason %q)", r.State, want, r.Reason)
	}
	return r
}

func (h *harness) runs() []ghemu.RunInfo {
	h.t.Helper()
	runs, err := h.e.Runs(ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		h.t.Fatal(err)
	}
	return runs
}

// botReplies are the bot's comments other than the status comment.
func (h *harness) botReplies(n int) []string {
	var out []string
	for _, c := range h.comments(n) {
		if c.GetUser().GetLogin() == ghemu.DefaultAppSlug+"[bot]" && !ledger.IsStatusComment(c.GetBody()) {
			out = append(out, c.GetBody())
		}
	}
	return out
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(fmt.Sprintf("bad URL %q: %v", s, err))
	}
	return u
}

func newTestServer(srv *Server) *httptest.Server { return httptest.NewServer(srv.Handler()) }
