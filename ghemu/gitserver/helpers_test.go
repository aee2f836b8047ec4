package gitserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/pktline"
)

// Tokens the test Authorize callback knows. The emulator's real rules live in ghemu;
// this one only has to produce each outcome the server must handle.
const (
	readToken      = "ghs_read"
	writeToken     = "ghs_write"
	forbiddenToken = "ghs_forbidden"
	hiddenRepo     = "secret"
)

var testAuthor = Signature{Name: "Mona Lisa", Email: "mona@example.com", When: time.Unix(1700000000, 0).UTC()}

// pushRecorder keeps what Options.Pushed was told.
type pushRecorder struct {
	mu     sync.Mutex
	pushes [][]pktline.RefUpdate
}

func (p *pushRecorder) record(_ *http.Request, _, _ string, u []pktline.RefUpdate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushes = append(p.pushes, u)
}

func (p *pushRecorder) all() [][]pktline.RefUpdate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]pktline.RefUpdate(nil), p.pushes...)
}

// testAuthorize grants by Basic-auth password, like an installation token would.
func testAuthorize(r *http.Request, owner, repo string, access Access) error {
	user, token, ok := r.BasicAuth()
	if !ok || user != "x-access-token" {
		return &AuthError{Status: http.StatusUnauthorized, Message: "Invalid username or token."}
	}
	switch {
	case repo == hiddenRepo:
		return &AuthError{Status: http.StatusNotFound}
	case token == forbiddenToken:
		return &AuthError{Status: http.StatusForbidden, Message: "Permission to " + owner + "/" + repo + ".git denied."}
	case token == writeToken, token == readToken && access == Read:
		return nil
	case token == readToken:
		return &AuthError{Status: http.StatusForbidden, Message: "Write access to repository not granted."}
	}
	return &AuthError{Status: http.StatusUnauthorized, Message: "Invalid username or token."}
}

type fixture struct {
	srv    *Server
	http   *httptest.Server
	pushed *pushRecorder
	env    []string // for the git client
}

// newFixture starts the server on loopback with opts filled in where empty, and one
// repository acme/widgets with a README on main.
func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed; install the Debian package git")
	}
	f := &fixture{pushed: &pushRecorder{}}
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	if opts.Authorize == nil {
		opts.Authorize = testAuthorize
	}
	if opts.Pushed == nil {
		opts.Pushed = f.pushed.record
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.srv = srv
	f.http = httptest.NewServer(srv)
	t.Cleanup(f.http.Close)
	home := t.TempDir()
	f.env = append(cleanEnv(),
		"HOME="+home, "XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
	if _, err := srv.CreateRepository(context.Background(), "acme", "widgets", "main",
		map[string][]byte{"README.md": []byte("# widgets\n")}, testAuthor); err != nil {
		t.Fatalf("CreateRepository: %v", err)
	}
	return f
}

// url is the clone URL of owner/repo with token as the password ("" for none).
func (f *fixture) url(token, owner, repo string) string {
	base := f.http.URL + "/" + owner + "/" + repo + ".git"
	if token == "" {
		return base
	}
	return strings.Replace(base, "http://", "http://x-access-token:"+token+"@", 1)
}

// git runs the real git client and returns its combined output and error.
func (f *fixture) git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustGit is git for steps that must succeed.
func (f *fixture) mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := f.git(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// clone clones acme/widgets with the write token into a new directory.
func (f *fixture) clone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "w")
	f.mustGit(t, "", "clone", "--quiet", f.url(writeToken, "acme", "widgets"), dir)
	return dir
}

// commit makes a commit in the clone at dir and returns its object name.
func (f *fixture) commit(t *testing.T, dir, file, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustGit(t, dir, "add", file)
	f.mustGit(t, dir, "commit", "--quiet", "-m", "change "+file)
	return f.mustGit(t, dir, "rev-parse", "HEAD")
}

func (f *fixture) ref(t *testing.T, ref string) string {
	t.Helper()
	refs, err := f.srv.Refs(context.Background(), "acme", "widgets")
	if err != nil {
		t.Fatalf("Refs: %v", err)
	}
	return refs[ref]
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
