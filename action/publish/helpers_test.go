package publish

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/testgate"
)

const (
	owner    = ghemu.DefaultOrg
	repoName = ghemu.DefaultRepo
	fullName = owner + "/" + repoName
	botLogin = ghemu.DefaultAppSlug + "[bot]"
)

// runPermissions are what bumper.token_permissions gives an implement run: no
// workflows.
var runPermissions = map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write"}

// host is the checked emulator (GitHub's API and its git server) behind a real
// firewall whose git gateway holds the run's installation token and lets it push
// refs/heads/bumper/1-1 only: what a run publishes through in production.
type host struct {
	e        *ghemu.Emulator
	token    string // the run's installation token: the firewall's and the runner's client's
	perms    map[string]string
	gh       *github.Client // the runner's client with the token, straight to the API
	gitURL   string         // http://<firewall>/git/acme/widgets.git
	auditLog string
	base     string // main's head, the approved base commit
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(zerolog.Nop().WithContext(context.Background()), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newHost(t testing.TB) *host {
	t.Helper()
	return newHostWith(t, ghemu.Options{})
}

// newHostWith is newHost on an emulator made with opts (its faults, say).
func newHostWith(t testing.TB, opts ghemu.Options) *host {
	t.Helper()
	testgate.Command(t, "git", "git")
	opts.StateDir = t.TempDir()
	e := emutest.New(t, opts)
	h := &host{e: e, perms: runPermissions}
	h.token = emutest.InstallationToken(t, e, owner, repoName, runPermissions)
	h.gh = apiClient(t, e, h.token)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(h.token), 0o600); err != nil {
		t.Fatal(err)
	}
	h.auditLog = filepath.Join(dir, "audit.jsonl")
	fw, err := firewall.New(&firewall.Config{
		Listen: "127.0.0.1:0", Audit: h.auditLog,
		Gateway: firewall.GatewayConfig{
			GitBase: e.BaseURL(), Repository: fullName, PushRef: "refs/heads/" + workspace.Branch(1, 1), TokenFile: tokenFile,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Start(zerolog.Nop().WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = fw.Stop(ctx)
	})
	h.gitURL = "http://" + fw.Addr() + "/git/" + fullName + ".git"
	h.base = h.refs(t)["refs/heads/main"]
	return h
}

// apiClient is a go-github client of the emulator's API with a token.
func apiClient(t testing.TB, e *ghemu.Emulator, token string) *github.Client {
	t.Helper()
	gh := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(token)
	u, err := url.Parse(e.BaseURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	gh.BaseURL = u
	return gh
}

func (h *host) refs(t testing.TB) map[string]string {
	t.Helper()
	refs, err := h.e.Git().Refs(context.Background(), owner, repoName)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// prepare makes the run's workspace at the base commit through the gateway.
func (h *host) prepare(t testing.TB, issue, attempt int) *workspace.Workspace {
	t.Helper()
	w, err := workspace.Prepare(testCtx(t), workspace.Options{GitURL: h.gitURL, Base: h.base, Issue: issue, Attempt: attempt,
		Dir: t.TempDir(), Task: map[string][]byte{"TASK.md": []byte("# Count widgets\n")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// agentCommit does what the VM does: commits files (path to content) on the work branch
// in a copy of the workspace disk with the machine's git, writes the bundle with the
// workspace's BundleCommand into OutDir, and reads it back with Result, which leaves
// refs/bumper/result in the host's repository.
func agentCommit(t testing.TB, w *workspace.Workspace, files map[string]string) *workspace.Result {
	t.Helper()
	return agentWork(t, w, func(repo string) {
		writeFiles(t, repo, files)
		guestGit(t, repo, "add", "-A")
		guestGit(t, repo, "commit", "-q", "-m", "Count widgets from the config")
	})
}

// writeFiles writes files (path to content) into a checkout.
func writeFiles(t testing.TB, repo string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(repo, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// agentWork is agentCommit with the agent's work done by work, in the "VM's" checkout.
func agentWork(t testing.TB, w *workspace.Workspace, work func(repo string)) *workspace.Result {
	t.Helper()
	r, err := agentWorkErr(t, w, work)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// agentWorkErr is agentWork with workspace.Result's refusal returned, not fatal.
func agentWorkErr(t testing.TB, w *workspace.Workspace, work func(repo string)) (*workspace.Result, error) {
	t.Helper()
	vm := filepath.Join(t.TempDir(), "vm")
	if out, err := exec.Command("cp", "-a", w.Dir, vm).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	repo := filepath.Join(vm, workspace.RepoDirName)
	work(repo)
	argv := w.BundleCommand()
	args := make([]string, 0, len(argv))
	for _, a := range argv[1:] {
		switch a {
		case workspace.GuestRepo:
			a = repo
		case workspace.GuestBundle:
			a = filepath.Join(w.OutDir, workspace.BundleName)
		}
		args = append(args, a)
	}
	guestGit(t, repo, args...)
	return w.Result(testCtx(t))
}

// guestGit is the "VM's" git: the machine's, isolated from the machine's configuration.
func guestGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return guestGitEnv(t, dir, nil, args...)
}

// guestGitEnv is guestGit with more of the environment (an author the agent claims).
func guestGitEnv(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// runEvidence is a realistic bundle (action/evidence's golden one) for this run.
func runEvidence(t testing.TB, h *host, r *workspace.Result, issue, attempt int) *evidence.Evidence {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "evidence", "testdata", "realistic.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := evidence.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	e.WorkItem = evidence.WorkItem{Repository: fullName, Issue: issue, Title: "Count widgets from the config"}
	e.Attempt, e.BaseCommit, e.HeadCommit, e.Branch, e.Diff = attempt, h.base, r.Head, workspace.Branch(issue, attempt), r.Diff
	return e
}

// waitAudit waits for substr in the firewall's audit log (flushed every second).
func (h *host) waitAudit(t testing.TB, substr string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(h.auditLog)
		if strings.Contains(string(b), substr) || time.Now().After(deadline) {
			return string(b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
