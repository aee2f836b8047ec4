package firewall

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/gateway"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/pktline"
	"github.com/bumperdev/bumper/internal/testgate"
)

const itDepToken = "ghs_DEPENDENCYTOKEN_0a1b2c3d4e5f6789"

// scopedGitHost is a git host that grants as GitHub would the two tokens of a run: the
// run's token reads and writes octo/demo; the dependency token reads octo/lib and
// octo/conf and writes nothing. It records every request it was asked, with the token.
type scopedGitHost struct {
	mu    sync.Mutex
	asked []string // "owner/repo access token"
}

func (h *scopedGitHost) authorize(r *http.Request, owner, repo string, access gitserver.Access) error {
	tok := "none"
	for _, t := range []string{itToken, itDepToken} {
		if r.Header.Get("Authorization") == "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+t)) {
			tok = t
		}
	}
	h.mu.Lock()
	h.asked = append(h.asked, fmt.Sprintf("%s/%s %v %s", owner, repo, access, tok))
	h.mu.Unlock()
	switch {
	case tok == itToken && owner+"/"+repo == "octo/demo":
		return nil
	case tok == itDepToken && (owner+"/"+repo == "octo/lib" || owner+"/"+repo == "octo/conf") && access == gitserver.Read:
		return nil
	}
	return &gitserver.AuthError{Status: http.StatusForbidden, Message: "denied"}
}

func (h *scopedGitHost) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.asked...)
}

// TestDependenciesThroughTheGitGateway: the run's dependencies are fetched with their own
// token and never pushed to, whatever the client sends; a repository not listed is
// refused; each token goes to its own repositories only; the audit log names the
// dependency of each fetch.
func TestDependenciesThroughTheGitGateway(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := context.Background()
	host := &scopedGitHost{}
	gs, err := gitserver.New(gitserver.Options{Root: t.TempDir(), Authorize: host.authorize})
	if err != nil {
		t.Skipf("git server unavailable: %v", err)
	}
	sig := gitserver.Signature{Name: "t", Email: "t@example.com"}
	for _, name := range []string{"demo", "lib", "conf", "secret"} {
		if _, err := gs.CreateRepository(ctx, "octo", name, "main", map[string][]byte{"README": []byte(name + "\n")}, sig); err != nil {
			t.Fatal(err)
		}
	}
	up := httptest.NewTLSServer(gs)
	defer up.Close()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{GitBase: up.URL, Token: itToken, Repository: "octo/demo", CAFile: writeCA(t, up),
		PushRef: "refs/heads/bumper/12-1", Dependencies: []string{"octo/lib", "Octo/Conf"}, DependencyToken: itDepToken, Audit: al})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	pol, _ := policy.New(nil, nil)
	srv, err := NewServer(Options{Policy: pol, Filter: policy.NewAddrFilter(nil), Audit: al, Gateway: gw, Resolver: fakeResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(zerolog.Nop().WithContext(ctx))
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	defer func() {
		cancel()
		<-done
		al.Close()
	}()
	base := "http://" + ln.Addr().String() + "/git/"
	work := t.TempDir()

	for _, name := range []string{"demo", "lib", "OCTO/LIB", "conf"} {
		path := name
		if !strings.Contains(name, "/") {
			path = "octo/" + name
		}
		t.Run("clone "+name, func(t *testing.T) {
			if out, err := gitRun(t, work, "clone", "-q", base+path+".git", strings.ReplaceAll(path, "/", "-")); err != nil {
				t.Fatalf("clone %s through the gateway: %v\n%s", path, err, out)
			}
		})
	}
	lib := filepath.Join(work, "octo-lib")
	gitRun(t, lib, "commit", "-q", "--allow-empty", "-m", "an agent's change")

	asked := len(host.requests())
	refused := []struct {
		name string
		do   func() (string, error)
		want string
	}{
		{"push to a dependency", func() (string, error) { return gitRun(t, lib, "push", "origin", "HEAD:refs/heads/bumper/12-1") }, "dependency-read-only"},
		{"push to a dependency's main", func() (string, error) { return gitRun(t, lib, "push", "origin", "HEAD:main") }, "dependency-read-only"},
		{"forged ref list to a dependency", func() (string, error) {
			body, _ := pktline.AppendString(nil, fmt.Sprintf("%s %s refs/heads/bumper/12-1\x00report-status\n", strings.Repeat("0", 40), strings.Repeat("1", 40)))
			return post(t, base+"octo/lib.git/git-receive-pack", pktline.AppendFlush(body))
		}, "dependency-read-only"},
		{"forged ref list to a dependency in capitals", func() (string, error) {
			body, _ := pktline.AppendString(nil, fmt.Sprintf("%s %s refs/heads/main\x00report-status\n", strings.Repeat("0", 40), strings.Repeat("1", 40)))
			return post(t, base+"OCTO/Lib.git/git-receive-pack", pktline.AppendFlush(body))
		}, "dependency-read-only"},
		{"receive-pack refs of a dependency", func() (string, error) { return get(t, base+"octo/lib.git/info/refs?service=git-receive-pack") }, "dependency-read-only"},
		{"a repository not listed", func() (string, error) { return gitRun(t, work, "clone", "-q", base+"octo/secret.git", "secret") }, "other-repository"},
		{"up the tree to one not listed", func() (string, error) {
			return get(t, base+"octo/lib.git/../../octo/secret.git/info/refs?service=git-upload-pack")
		}, "segments are refused"},
		{"encoded dots", func() (string, error) { return get(t, base+"octo/%2e%2e/secret.git/info/refs?service=git-upload-pack") }, "encoded"},
		{"encoded letters", func() (string, error) { return get(t, base+"octo/l%69b.git/info/refs?service=git-upload-pack") }, "git paths look like"},
		{"a dependency's name with a suffix", func() (string, error) { return get(t, base+"octo/lib.git.git/info/refs?service=git-upload-pack") }, "other-repository"},
		{"a dependency's name as a prefix", func() (string, error) { return get(t, base+"octo/libx.git/info/refs?service=git-upload-pack") }, "other-repository"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.do()
			if err == nil || !strings.Contains(out, tt.want) {
				t.Fatalf("got err=%v; want a refusal saying %q:\n%s", err, tt.want, out)
			}
		})
	}
	if got := host.requests(); len(got) != asked {
		t.Fatalf("the git host was asked %v after the refusals", got[asked:])
	}
	for _, req := range host.requests() {
		repo, _, _ := strings.Cut(req, " ")
		own := strings.EqualFold(repo, "octo/demo")
		switch {
		case own && !strings.HasSuffix(req, itToken):
			t.Errorf("the run's repository was asked without the run's token: %s", req)
		case !own && !strings.HasSuffix(req, itDepToken):
			t.Errorf("a dependency was asked without the dependency token: %s", req)
		case strings.Contains(req, "octo/secret"):
			t.Errorf("the host was asked for a repository not listed: %s", req)
		}
	}
	al.Flush()
	data, _ := os.ReadFile(auditPath)
	for _, want := range []string{"git git-upload-pack (dependency octo/lib)", "(dependency Octo/Conf)", "dependency-read-only"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the audit log lacks %q", want)
		}
	}
	for _, secret := range []string{itToken, itDepToken} {
		if strings.Contains(string(data), secret) {
			t.Errorf("a token is in the audit log")
		}
	}
}

// post and get send one request and return its status and body, an error for a status
// other than 200 or a report that refuses.
func post(t *testing.T, url string, body []byte) (string, error) {
	t.Helper()
	resp, err := http.Post(url, "application/x-git-receive-pack-request", strings.NewReader(string(body)))
	return answer(t, resp, err)
}

func get(t *testing.T, url string) (string, error) {
	t.Helper()
	resp, err := http.Get(url)
	return answer(t, resp, err)
}

func answer(t *testing.T, resp *http.Response, err error) (string, error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	out := resp.Status + " " + string(b[:n])
	if resp.StatusCode != http.StatusOK || strings.Contains(out, " ng ") {
		return out, fmt.Errorf("%s", resp.Status)
	}
	return out, nil
}
