package workspace

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/testgate"
)

const (
	owner = ghemu.DefaultOrg
	repo  = ghemu.DefaultRepo
)

// gitHost is the emulator's git server behind a real firewall with its git gateway:
// the path Prepare's fetch takes in production.
type gitHost struct {
	e        *ghemu.Emulator
	stateDir string // the emulator's state, its bare repositories included
	fw       *firewall.Firewall
	token    string // the run's installation token, held by the firewall only
	userURL  string // the emulator's repository URL with a maintainer's token, for seeding
	gitURL   string // the gateway: http://<firewall>/git/acme/widgets.git
	auditLog string
	seq      atomic.Int64
}

// newGitHost starts a checked emulator, mints a contents:read installation token for
// acme/widgets, and starts a firewall whose git gateway uses it.
func newGitHost(t testing.TB) *gitHost {
	t.Helper()
	testgate.Command(t, "git", "git")
	stateDir := t.TempDir()
	e := emutest.New(t, ghemu.Options{StateDir: stateDir})
	h := &gitHost{e: e, stateDir: stateDir, token: emutest.InstallationToken(t, e, owner, repo, map[string]string{"contents": "read"})}
	u, _ := url.Parse(e.BaseURL() + "/" + owner + "/" + repo + ".git")
	u.User = url.UserPassword("x-access-token", e.UserToken(ghemu.DefaultMaintainer))
	h.userURL = u.String()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(h.token), 0o600); err != nil {
		t.Fatal(err)
	}
	h.auditLog = filepath.Join(dir, "audit.jsonl")
	fw, err := firewall.New(&firewall.Config{
		Listen: "127.0.0.1:0", Audit: h.auditLog,
		Gateway: firewall.GatewayConfig{
			GitBase: e.BaseURL(), Repository: owner + "/" + repo, PushRef: "refs/heads/" + Branch(1, 1), TokenFile: tokenFile,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := zerolog.Nop().WithContext(context.Background())
	if err := fw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = fw.Stop(sctx)
	})
	h.fw = fw
	h.gitURL = "http://" + fw.Addr() + "/git/" + owner + "/" + repo + ".git"
	return h
}

// hostGit runs the machine's git for test fixtures, isolated from the machine's
// configuration; it is not the code under test.
func hostGit(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Mae", "GIT_AUTHOR_EMAIL=maintainer@example.test", "GIT_COMMITTER_NAME=Mae", "GIT_COMMITTER_EMAIL=maintainer@example.test",
		"GIT_AUTHOR_DATE=2026-11-01T10:00:00Z", "GIT_COMMITTER_DATE=2026-11-01T10:00:00Z",
		"http_proxy=", "https_proxy=", "HTTP_PROXY=", "HTTPS_PROXY=")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

// scratch is a local repository for building fixture commits.
func scratch(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	hostGit(t, dir, nil, "init", "-q", "--template=", "-b", "main")
	return dir
}

// publish pushes commit from a scratch repository to a new branch of acme/widgets (as a
// maintainer; main is protected) and returns the commit.
func (h *gitHost) publish(t testing.TB, dir, commit string) string {
	t.Helper()
	branch := fmt.Sprintf("refs/heads/fixture-%d", h.seq.Add(1))
	hostGit(t, dir, nil, "-c", "pack.threads=2", "push", "-q", h.userURL, commit+":"+branch)
	return commit
}

// commitTree commits a tree given as git mktree lines ("<mode> <type> <oid>\t<name>").
func commitTree(t testing.TB, dir string, entries []string, parent, msg string) string {
	t.Helper()
	tree := hostGit(t, dir, []byte(strings.Join(entries, "\n")+"\n"), "mktree", "--missing")
	args := []string{"commit-tree", tree, "-m", msg}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return hostGit(t, dir, nil, args...)
}

func blob(t testing.TB, dir, content string) string {
	t.Helper()
	return hostGit(t, dir, []byte(content), "hash-object", "-w", "--stdin")
}

// realisticRepo builds, with git fast-import, a repository shaped like a source tree:
// files of text in nested directories totalling about size bytes, over commits commits
// (each changes a tenth of the files), and returns the last commit.
func realisticRepo(t testing.TB, dir string, files, size, commits int) string {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields("func return if else for range var const type struct interface map chan go defer err nil true false package import string int byte error context ctx test want got")
	var stream bytes.Buffer
	mark := 0
	content := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			for range 8 {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(r.IntN(1 << 30)))
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	per := size / files
	for c := 0; c < commits; c++ {
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter Mae <maintainer@example.test> %d +0000\ndata <<EOF\ncommit %d\nEOF\n", 1790000000+c*3600, c)
		for i := 0; i < files; i++ {
			if c > 0 && i%10 != c%10 {
				continue
			}
			mark++
			data := content(per/2 + r.IntN(per))
			path := fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%40, i%7, i)
			fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", path, len(data), data)
		}
	}
	hostGit(t, dir, stream.Bytes(), "fast-import", "--quiet")
	return hostGit(t, dir, nil, "rev-parse", "refs/heads/main")
}

// options are Prepare's options for commit through h's gateway.
func (h *gitHost) options(t testing.TB, commit string) Options {
	return Options{GitURL: h.gitURL, Base: commit, Issue: 1, Attempt: 1, Dir: t.TempDir(),
		Task: map[string][]byte{"TASK.md": []byte("# Add frob\n"), "task.json": []byte("{}\n")}}
}

// auditLines returns the firewall's audit log (flushed by then? the firewall flushes
// every second and at exit, so wait for the line to appear).
func (h *gitHost) waitAudit(t testing.TB, substr string) string {
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
