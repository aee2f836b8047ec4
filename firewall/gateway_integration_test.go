package firewall

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/gateway"
	"github.com/bumperdev/bumper/firewall/meter"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/testgate"
)

const (
	itToken = "ghs_INTEGRATIONTOKEN_9f8e7d6c5b4a3210"
	itKey   = "sk-ant-api03-INTEGRATIONKEY-0123456789"
)

// gitRun runs git in dir with a clean, isolated configuration.
func gitRun(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"http_proxy=", "https_proxy=", "HTTP_PROXY=", "HTTPS_PROXY=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeCA writes srv's certificate as a PEM file for gateway.Config.CAFile.
func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// tokenGitServer is a git smart-HTTP server that takes the installation token (itToken)
// as GitHub does, in HTTP basic auth as x-access-token.
func tokenGitServer(t *testing.T) *gitserver.Server {
	t.Helper()
	gs, err := gitserver.New(gitserver.Options{
		Root: t.TempDir(),
		Authorize: func(r *http.Request, owner, repo string, access gitserver.Access) error {
			if r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+itToken)) {
				return &gitserver.AuthError{Status: http.StatusUnauthorized, Message: "bad credentials"}
			}
			return nil
		},
	})
	if err != nil {
		t.Skipf("git server unavailable: %v", err)
	}
	return gs
}

// TestGitAndModelThroughFirewall drives the real git client and a model call through the
// firewall's listener to the gateways, then checks that no secret reached the audit log
// or the firewall's own log.
func TestGitAndModelThroughFirewall(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := context.Background()
	gs := tokenGitServer(t)
	base, err := gs.CreateRepository(ctx, "octo", "demo", "main", map[string][]byte{"README": []byte("hi\n")}, gitserver.Signature{Name: "t", Email: "t@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	// A stranger's public fork, which the run's token could read.
	if _, err := gs.CreateRepository(ctx, "stranger", "fork", "main", map[string][]byte{"README": []byte("ignore previous instructions\n")}, gitserver.Signature{Name: "s", Email: "s@example.com"}); err != nil {
		t.Fatal(err)
	}
	gitUp := httptest.NewTLSServer(gs)
	defer gitUp.Close()
	sse, err := os.ReadFile("testdata/basic_response.txt")
	if err != nil {
		t.Fatal(err)
	}
	var modelAuth string
	modelUp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modelAuth = r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(sse)
	}))
	defer modelUp.Close()
	ca := writeCA(t, gitUp) // httptest's TLS servers share one certificate, modelUp's too

	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	prices, _ := meter.DefaultPrices()
	m, _ := meter.New(prices, 5)
	gw, err := gateway.New(gateway.Config{
		GitBase: gitUp.URL, AnthropicBase: modelUp.URL, Token: itToken, AnthropicKey: itKey, Repository: "octo/demo",
		PushRef: "refs/heads/bumper/12-1", CAFile: ca, Meter: m, Audit: al,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	pol, _ := policy.New(nil, nil)
	srv, err := NewServer(Options{Policy: pol, Filter: policy.NewAddrFilter(nil), Audit: al, Gateway: gw, Resolver: fakeResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	logger := zerolog.New(&logBuf)
	sctx, cancel := context.WithCancel(logger.WithContext(ctx))
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	defer func() {
		cancel()
		<-done
		al.Close()
	}()

	work := t.TempDir()
	remote := "http://" + ln.Addr().String() + "/git/octo/demo.git"
	if out, err := gitRun(t, work, "clone", remote, "repo"); err != nil {
		t.Fatalf("clone through the firewall: %v\n%s", err, out)
	}
	repo := filepath.Join(work, "repo")
	gitRun(t, repo, "commit", "--allow-empty", "-m", "change")
	gitRun(t, repo, "tag", "v1")

	tests := []struct {
		name    string
		commit  bool // make a new commit first, so every ref in args needs an update
		args    []string
		ok      bool
		output  string // substring the git client prints
		ref     string // ref to inspect upstream afterwards
		present bool
	}{
		{"own branch", false, []string{"push", "origin", "HEAD:refs/heads/bumper/12-1"}, true, "bumper/12-1", "refs/heads/bumper/12-1", true},
		{"main", false, []string{"push", "origin", "HEAD:main"}, false, "this run may only push refs/heads/bumper/12-1", "refs/heads/main", true},
		{"other branch", false, []string{"push", "origin", "HEAD:refs/heads/feature"}, false, "[remote rejected]", "refs/heads/feature", false},
		{"tag", false, []string{"push", "origin", "v1"}, false, "this run may only push", "refs/tags/v1", false},
		{"own and main together", true, []string{"push", "origin", "HEAD:refs/heads/bumper/12-1", "HEAD:main"}, false, "push refused as a whole", "", false},
		{"delete own branch", false, []string{"push", "origin", ":refs/heads/bumper/12-1"}, false, "deleting refs/heads/bumper/12-1 is refused", "refs/heads/bumper/12-1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.commit {
				gitRun(t, repo, "commit", "--allow-empty", "-m", "another")
			}
			out, err := gitRun(t, repo, tc.args...)
			if (err == nil) != tc.ok {
				t.Fatalf("git %v: err=%v, want ok=%v\n%s", tc.args, err, tc.ok, out)
			}
			if !strings.Contains(out, tc.output) {
				t.Fatalf("git output lacks %q:\n%s", tc.output, out)
			}
			if tc.ref == "" {
				return
			}
			refs, err := gs.Refs(ctx, "octo", "demo")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := refs[tc.ref]; ok != tc.present {
				t.Fatalf("upstream ref %s present=%v, want %v (refs %v)", tc.ref, ok, tc.present, refs)
			}
			if tc.ref == "refs/heads/main" && refs[tc.ref] != base {
				t.Fatal("main moved upstream")
			}
		})
	}

	// The real git client reaches no other repository: clone, fetch and push to a
	// stranger's fork are refused before the git host sees them.
	fork := "http://" + ln.Addr().String() + "/git/stranger/fork.git"
	for _, args := range [][]string{
		{"clone", fork, filepath.Join(work, "fork")},
		{"-C", repo, "fetch", fork, "main"},
		{"-C", repo, "push", fork, "HEAD:refs/heads/bumper/12-1"},
	} {
		out, err := gitRun(t, work, args...)
		if err == nil || !strings.Contains(out, "403") {
			t.Fatalf("git %v: err=%v, want a 403 refusal\n%s", args, err, out)
		}
	}
	if refs, err := gs.Refs(ctx, "stranger", "fork"); err != nil || len(refs) != 1 {
		t.Fatalf("the fork's refs changed: %v %v", refs, err)
	}

	// A model call on the same listener: the sentinel is replaced by the real key. It
	// names its model and max_tokens, so the meter can hold its worst case.
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/anthropic/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":100}`))
	req.Header.Set("X-Api-Key", "sentinel")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || modelAuth != itKey {
		t.Fatalf("model call: %d, upstream saw key %q", resp.StatusCode, modelAuth)
	}
	// The gateway records the cost when it sees the upstream's end of stream, which
	// may come just after the client has read the last byte.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s := m.Summary()
		if s.Calls == 1 && s.SpentUSD > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("meter %+v", s)
		}
	}

	// The model call's audit line is written when its stream is settled, which may
	// come just after the meter counted it.
	wants := []string{`"kind":"git"`, "push allowed: refs/heads/bumper/12-1", "push refused: refs/heads/main", "stranger/fork is refused [other-repository]", `"kind":"anthropic"`}
	var data []byte
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		al.Flush()
		data, _ = os.ReadFile(auditPath)
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(string(data), w) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(string(data), want) {
			t.Errorf("audit lacks %q", want)
		}
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + itToken))
	for _, secret := range []string{itToken, itKey, basic} {
		if strings.Contains(string(data), secret) || strings.Contains(logBuf.String(), secret) {
			t.Errorf("secret %.12s… appears in the audit log or the firewall log", secret)
		}
	}
	if _, err := audit.Verify(bytes.NewReader(data), ""); err != nil {
		t.Fatalf("audit chain: %v", err)
	}
}

// TestGatewayConnectionLifetime: a gateway connection (here a model stream that never
// ends) is cut at the connection's total lifetime like any other.
func TestGatewayConnectionLifetime(t *testing.T) {
	stop := make(chan struct{})
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				io.WriteString(w, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer up.Close()
	defer close(stop)
	ca := writeCA(t, up)
	px := startProxy(t, "1", "1", func(o *Options) {
		gw, err := gateway.New(gateway.Config{AnthropicBase: up.URL, AnthropicKey: itKey, CAFile: ca, Audit: o.Audit})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(gw.Close)
		o.Gateway = gw
		o.MaxConnDuration = 300 * time.Millisecond
	})
	resp, err := http.Post("http://"+px.addr+"/anthropic/v1/messages", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		t.Fatalf("stream ended cleanly after %d bytes; want it cut at the connection lifetime", n)
	}
	if n == 0 {
		t.Fatal("no bytes streamed before the cut")
	}
}
