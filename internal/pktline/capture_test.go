package pktline_test

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bumperdev/bumper/internal/pktline"
	"github.com/bumperdev/bumper/internal/testgate"
)

var update = flag.Bool("update", false, "rewrite testdata/*.req from a live git push")

// gitEnv is an environment for the real git client that keeps this machine's git
// configuration out of the test.
func gitEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return append(cleanEnv(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_DATE=1700000000 +0000",
	)
}

func git(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// recorder serves a directory of bare repositories with git http-backend and keeps the
// body of every receive-pack request it forwards.
type recorder struct {
	backend http.Handler
	mu      sync.Mutex
	bodies  [][]byte
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
			r.Header.Del("Content-Encoding")
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, b)
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	}
	rec.backend.ServeHTTP(w, r)
}

func newRecorder(t *testing.T, root string) *recorder {
	t.Helper()
	testgate.Command(t, "git", "git")
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend is missing (%v); install the Debian package git", err)
	}
	return &recorder{backend: &cgi.Handler{
		Path: backend,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=test",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		},
	}}
}

// TestCapturedPush pushes with the real git client through a recording handler and
// parses exactly the bytes git sent.
func TestCapturedPush(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			root := t.TempDir()
			env := gitEnv(t)
			rec := newRecorder(t, root)
			srv := httptest.NewServer(rec)
			defer srv.Close()

			git(t, env, root, "init", "--quiet", "--bare", "--object-format="+format, "repo.git")
			work := t.TempDir()
			git(t, env, work, "init", "--quiet", "--object-format="+format, "--initial-branch=main", ".")
			if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			git(t, env, work, "add", "a.txt")
			git(t, env, work, "commit", "--quiet", "-m", "first")
			first := git(t, env, work, "rev-parse", "HEAD")
			git(t, env, work, "remote", "add", "origin", srv.URL+"/repo.git")
			git(t, env, work, "push", "--quiet", "origin", "main", "main:refs/heads/topic")

			git(t, env, work, "commit", "--quiet", "--allow-empty", "-m", "second")
			second := git(t, env, work, "rev-parse", "HEAD")
			git(t, env, work, "push", "--quiet", "origin", "main", ":refs/heads/topic")

			zero := strings.Repeat("0", len(first))
			want := [][]pktline.RefUpdate{
				{{Old: zero, New: first, Ref: "refs/heads/main"}, {Old: zero, New: first, Ref: "refs/heads/topic"}},
				{{Old: first, New: second, Ref: "refs/heads/main"}, {Old: first, New: zero, Ref: "refs/heads/topic"}},
			}
			if len(rec.bodies) != len(want) {
				t.Fatalf("recorded %d receive-pack bodies, want %d", len(rec.bodies), len(want))
			}
			for i, body := range rec.bodies {
				cl, err := pktline.ReadCommands(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("push %d: ReadCommands: %v", i+1, err)
				}
				if !bytes.HasPrefix(body, cl.Raw) {
					t.Errorf("push %d: Raw is not a prefix of the body", i+1)
				}
				if got := cl.ObjectFormat(); got != format {
					t.Errorf("push %d: object format %q, want %q", i+1, got, format)
				}
				if !cl.HasCapability("report-status-v2") || !cl.HasCapability("agent") {
					t.Errorf("push %d: capabilities %q lack report-status-v2 or agent", i+1, cl.Capabilities)
				}
				if len(cl.Updates) != len(want[i]) {
					t.Fatalf("push %d: updates %v, want %v", i+1, cl.Updates, want[i])
				}
				for j := range want[i] {
					if cl.Updates[j] != want[i][j] {
						t.Errorf("push %d update %d: %v, want %v", i+1, j, cl.Updates[j], want[i][j])
					}
				}
				rest := body[len(cl.Raw):]
				if i == 0 && !bytes.HasPrefix(rest, []byte("PACK")) {
					t.Errorf("push %d: bytes after the command list start %q, want the pack", i+1, rest[:min(len(rest), 8)])
				}
				if *update {
					name := filepath.Join("testdata", format+"-push"+string(rune('1'+i))+".req")
					if err := os.WriteFile(name, body, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// cleanEnv is this process's environment without git's own variables, which would
// otherwise point the client at other repositories or configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}
