package firewall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/gateway"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/pktline"
	"github.com/bumperdev/bumper/internal/testgate"
)

// TestFixRunPushPolicy: a fix run's gateway lets its push only move the pull request's
// branch on from the head the run started at. Written as the fix run's agent would try
// with the real git client (and with hand-made pkt-lines where git's client would stop
// it first): while the agent runs, pushes are closed, its forced push included; and even
// with pushes open, main, another bumper branch, another issue's branch, a delete, a
// create, and an update from any commit but the pull request's head are refused before
// the git host sees them, each with an audit line saying why. Only the fast-forward
// from the head goes through.
func TestFixRunPushPolicy(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := context.Background()
	gs := tokenGitServer(t)
	sig := gitserver.Signature{Name: "t", Email: "t@example.com"}
	base, err := gs.CreateRepository(ctx, "octo", "demo", "main", map[string][]byte{"README": []byte("hi\n")}, sig)
	if err != nil {
		t.Fatal(err)
	}
	// The pull request's branch (attempt 1's) at its head, and another attempt's.
	if err := gs.UpdateRef(ctx, "octo", "demo", "refs/heads/bumper/12-1", base, ""); err != nil {
		t.Fatal(err)
	}
	head, err := gs.CommitFiles(ctx, "octo", "demo", "bumper/12-1", base, map[string][]byte{"widgets.sh": []byte("echo 4\n")}, "the implement run's", sig)
	if err != nil {
		t.Fatal(err)
	}
	if err := gs.UpdateRef(ctx, "octo", "demo", "refs/heads/bumper/12-2", base, ""); err != nil {
		t.Fatal(err)
	}
	up := httptest.NewTLSServer(gs)
	defer up.Close()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{GitBase: up.URL, Token: itToken, Repository: "octo/demo", CAFile: writeCA(t, up),
		PushRef: "refs/heads/bumper/12-1", PushFrom: head, PushClosed: true, Audit: al})
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
	remote := "http://" + ln.Addr().String() + "/git/octo/demo.git"
	work := t.TempDir()
	if out, err := gitRun(t, work, "clone", "-q", "-b", "bumper/12-1", remote, "repo"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	repo := filepath.Join(work, "repo")
	gitRun(t, repo, "commit", "-q", "--allow-empty", "-m", "Fix failing checks (#12)")
	fix, _ := gitRun(t, repo, "rev-parse", "HEAD")
	fix = strings.TrimSpace(fix)
	gitRun(t, repo, "checkout", "-q", "--orphan", "rewrite")
	gitRun(t, repo, "commit", "-q", "--allow-empty", "-m", "history rewritten")
	unrelated, _ := gitRun(t, repo, "rev-parse", "HEAD")
	unrelated = strings.TrimSpace(unrelated)
	gitRun(t, repo, "checkout", "-q", "bumper/12-1")

	// rawPush sends one hand-made ref update (an empty pack follows), as an agent that
	// writes pkt-lines itself would; it returns the gateway's report, and an error when
	// the report refuses the update.
	rawPush := func(t *testing.T, old, next, ref string) (string, error) {
		t.Helper()
		body, _ := pktline.AppendString(nil, fmt.Sprintf("%s %s %s\x00report-status\n", old, next, ref))
		body = pktline.AppendFlush(body)
		resp, err := http.Post(remote+"/git-receive-pack", "application/x-git-receive-pack-request", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := &strings.Builder{}
		_, _ = fmt.Fprint(b, resp.Status, " ")
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		if strings.Contains(b.String(), "ng "+ref) {
			return b.String(), errors.New("refused")
		}
		return b.String(), nil
	}
	zero := strings.Repeat("0", 40)
	steps := []struct {
		name  string
		open  bool
		push  func(t *testing.T) (string, error)
		want  string
		moved bool // the branch moves to fix
	}{
		{"the agent's forced push while it runs", false, func(t *testing.T) (string, error) {
			return gitRun(t, repo, "push", "-f", "origin", unrelated+":refs/heads/bumper/12-1")
		}, "pushes are closed", false},
		{"main", true, func(t *testing.T) (string, error) { return gitRun(t, repo, "push", "origin", "HEAD:main") },
			"this run may only push refs/heads/bumper/12-1", false},
		{"another bumper branch", true, func(t *testing.T) (string, error) {
			return gitRun(t, repo, "push", "-f", "origin", "HEAD:refs/heads/bumper/12-2")
		}, "this run may only push refs/heads/bumper/12-1", false},
		{"another issue's branch", true, func(t *testing.T) (string, error) {
			return gitRun(t, repo, "push", "origin", "HEAD:refs/heads/bumper/13-1")
		}, "this run may only push refs/heads/bumper/12-1", false},
		{"a delete", true, func(t *testing.T) (string, error) {
			return gitRun(t, repo, "push", "origin", ":refs/heads/bumper/12-1")
		},
			"deleting refs/heads/bumper/12-1 is refused", false},
		{"an update from another commit", true, func(t *testing.T) (string, error) {
			return rawPush(t, base, fix, "refs/heads/bumper/12-1")
		}, "may only move refs/heads/bumper/12-1 on from " + head + " (a fast-forward), not from " + base, false},
		{"a create", true, func(t *testing.T) (string, error) {
			return rawPush(t, zero, fix, "refs/heads/bumper/12-1")
		}, "not from " + zero, false},
		{"the fast-forward from the head", true, func(t *testing.T) (string, error) {
			return gitRun(t, repo, "push", "origin", "HEAD:refs/heads/bumper/12-1")
		}, "bumper/12-1", true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			gw.SetPushOpen(s.open)
			out, err := s.push(t)
			if !strings.Contains(out, s.want) || s.moved != (err == nil) {
				t.Fatalf("push: err=%v, want %q in:\n%s", err, s.want, out)
			}
			refs, err := gs.Refs(ctx, "octo", "demo")
			if err != nil {
				t.Fatal(err)
			}
			want := head
			if s.moved {
				want = fix
			}
			if refs["refs/heads/bumper/12-1"] != want || refs["refs/heads/main"] != base || refs["refs/heads/bumper/12-2"] != base || refs["refs/heads/bumper/13-1"] != "" {
				t.Fatalf("upstream refs %v; want the pull request's branch at %.12s and nothing else moved", refs, want)
			}
		})
	}
	al.Flush()
	data, _ := os.ReadFile(auditPath)
	for _, want := range []string{"push refused: refs/heads/main", "push refused: refs/heads/bumper/12-1 (this run may only move", "push allowed: refs/heads/bumper/12-1"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("audit lacks %q", want)
		}
	}
}

// TestPushFromNeedsACommit: a gateway told to guard the old value with anything but a
// full commit id, or without a push ref, does not start.
func TestPushFromNeedsACommit(t *testing.T) {
	al, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	for _, tt := range []struct{ ref, from string }{
		{"refs/heads/bumper/12-1", "main"}, {"refs/heads/bumper/12-1", strings.Repeat("A", 40)}, {"", strings.Repeat("a", 40)},
	} {
		if _, err := gateway.New(gateway.Config{GitBase: "https://github.com", Token: itToken, Repository: "octo/demo", PushRef: tt.ref, PushFrom: tt.from, Audit: al}); err == nil || !strings.Contains(err.Error(), "push_from") {
			t.Errorf("PushRef %q PushFrom %q: %v", tt.ref, tt.from, err)
		}
	}
}
