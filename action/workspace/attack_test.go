package workspace

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

// hostile is the world a repository would need to run code on the host: a caller's
// environment full of git configuration (filters, hooks, textconv, an exec path with
// a fake remote helper, a template directory with hooks), every command of which
// touches a marker file. None of it may reach Prepare's or Result's git.
type hostile struct {
	marker  string // must never exist
	outside string // a directory beside the workspace that must stay empty
	canary  *httptest.Server
	hits    atomic.Int64
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	dir := t.TempDir()
	x := &hostile{marker: filepath.Join(dir, "PWNED"), outside: filepath.Join(dir, "outside")}
	if err := os.Mkdir(x.outside, 0o755); err != nil {
		t.Fatal(err)
	}
	x.canary = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x.hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(x.canary.Close)
	return x
}

// cmd is a shell command that leaves the marker.
func (x *hostile) cmd() string { return "touch " + x.marker }

// setEnv fills the process environment with hostile git configuration; call it after
// the fixtures are built (they use the environment too).
func (x *hostile) setEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	gitconfig := `[filter "evil"]
	smudge = ` + x.cmd() + `
	clean = ` + x.cmd() + `
	process = ` + x.cmd() + `
	required = true
[filter "lfs"]
	smudge = ` + x.cmd() + `
	process = ` + x.cmd() + `
[core]
	hooksPath = .githooks
	fsmonitor = ` + x.cmd() + `
	sshCommand = ` + x.cmd() + `
[diff "evil"]
	textconv = ` + x.cmd() + `
	command = ` + x.cmd() + `
[credential]
	helper = !` + x.cmd() + `
[submodule]
	recurse = true
[protocol]
	allow = always
[url "` + x.canary.URL + `/"]
	insteadOf = http://
`
	if err := os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
		if err := os.WriteFile(p, []byte(gitconfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	execPath := t.TempDir()
	templates := filepath.Join(t.TempDir(), "hooks")
	if err := os.MkdirAll(templates, 0o755); err != nil {
		t.Fatal(err)
	}
	script := []byte("#!/bin/sh\n" + x.cmd() + "\n")
	for _, p := range []string{filepath.Join(execPath, "git-remote-http"), filepath.Join(execPath, "git-fetch"),
		filepath.Join(templates, "post-checkout"), filepath.Join(templates, "reference-transaction")} {
		if err := os.WriteFile(p, script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "filter.evil.smudge", "GIT_CONFIG_VALUE_0": x.cmd(),
		"GIT_CONFIG_KEY_1": "core.hooksPath", "GIT_CONFIG_VALUE_1": filepath.Dir(templates),
		"GIT_CONFIG_PARAMETERS": "'filter.evil.clean'='" + x.cmd() + "'",
		"GIT_EXEC_PATH":         execPath, "GIT_TEMPLATE_DIR": filepath.Dir(templates),
		"GIT_SSH_COMMAND": x.cmd(), "GIT_ASKPASS": "/bin/sh", "GIT_EXTERNAL_DIFF": x.cmd(),
		"GIT_DIR": x.outside, "GIT_WORK_TREE": x.outside, "GIT_PROXY_COMMAND": x.cmd(),
		"http_proxy": x.canary.URL, "HTTP_PROXY": x.canary.URL, "GIT_TRACE": filepath.Join(x.outside, "trace"),
	} {
		t.Setenv(k, v)
	}
}

// check fails the test if anything ran or anything was written outside the workspace.
func (x *hostile) check(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(x.marker); err == nil {
		t.Error("a command from the repository or the environment ran on the host")
	}
	if left, _ := os.ReadDir(x.outside); len(left) != 0 {
		t.Errorf("something was written outside the workspace: %v", left)
	}
	if n := x.hits.Load(); n != 0 {
		t.Errorf("the canary server got %d requests (a submodule or a rewritten URL was fetched)", n)
	}
}

// TestHostileRepositories: repositories built to run code or write outside the
// workspace while they are fetched and checked out, under a hostile environment.
func TestHostileRepositories(t *testing.T) {
	testgate.Slow(t, "git over a dozen hostile repositories, seconds")
	h := newGitHost(t)
	ctx := testCtx(t)
	x := newHostile(t)
	src := scratch(t)
	evil := blob(t, src, "#!/bin/sh\n"+x.cmd()+"\n")
	data := blob(t, src, "payload\n")

	// A submodule whose checkout would fetch from the canary and run an update command.
	subCommit := commitTree(t, src, []string{"100644 blob " + data + "\tinner"}, "", "inner")
	gitmodules := blob(t, src, "[submodule \"sub\"]\n\tpath = sub\n\turl = "+x.canary.URL+"/sub.git\n")
	gitmodulesUpdate := blob(t, src, "[submodule \"sub\"]\n\tpath = sub\n\turl = "+x.canary.URL+"/sub.git\n\tupdate = !"+x.cmd()+"\n")
	dotgit := commitTree(t, src, []string{"100755 blob " + evil + "\tpost-checkout"}, "", "x")
	dotgitTree := hostGit(t, src, nil, "rev-parse", dotgit+"^{tree}")
	hooksTree := hostGit(t, src, []byte("100755 blob "+evil+"\tpost-checkout\n"), "mktree")
	dashURL := blob(t, src, "[submodule \"sub\"]\n\tpath = sub\n\turl = --upload-pack="+x.cmd()+"\n")
	r := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 4<<20)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	bigRandom := hostGit(t, src, noise, "hash-object", "-w", "--stdin")
	zeros := hostGit(t, src, make([]byte, 96<<20), "hash-object", "-w", "--stdin")

	tests := []struct {
		name    string
		entries []string
		limit   func(*Options)
		want    error  // nil: Prepare succeeds
		msg     string // in the error
		after   func(t *testing.T, w *Workspace)
	}{
		{
			name: "filters in .gitattributes",
			entries: []string{
				"100644 blob " + blob(t, src, "* filter=evil diff=evil merge=evil\n*.bin filter=lfs diff=lfs merge=lfs -text\n* ident\n") + "\t.gitattributes",
				"100644 blob " + data + "\tREADME", "100644 blob " + data + "\tx.bin",
			},
			after: func(t *testing.T, w *Workspace) {
				if b, _ := os.ReadFile(filepath.Join(w.RepoDir, "README")); string(b) != "payload\n" {
					t.Errorf("README = %q: a filter changed it", b)
				}
			},
		},
		{
			name:    "submodule with an update command",
			entries: []string{"100644 blob " + gitmodulesUpdate + "\t.gitmodules", "160000 commit " + subCommit + "\tsub"},
			msg:     "gitmodulesUpdate", want: errAny,
		},
		{
			name: "submodule with a URL",
			entries: []string{
				"100644 blob " + gitmodules + "\t.gitmodules", "160000 commit " + subCommit + "\tsub",
			},
			after: func(t *testing.T, w *Workspace) {
				if left, _ := os.ReadDir(filepath.Join(w.RepoDir, "sub")); len(left) != 0 {
					t.Errorf("the submodule was checked out: %v", left)
				}
			},
		},
		{
			name:    "submodule URL that is an option",
			entries: []string{"100644 blob " + dashURL + "\t.gitmodules", "160000 commit " + subCommit + "\tsub"},
			msg:     "gitmodulesUrl", want: errAny,
		},
		{
			name: "hooks in the tree",
			entries: []string{
				"040000 tree " + hooksTree + "\thooks", "040000 tree " + hooksTree + "\t.githooks",
				"100755 blob " + evil + "\tpost-checkout",
			},
		},
		{name: "a .git directory in the tree", entries: []string{"040000 tree " + dotgitTree + "\t.git"}, msg: "hasDotgit", want: errAny},
		{name: "a .GIT directory in the tree", entries: []string{"040000 tree " + dotgitTree + "\t.GIT"}, msg: "hasDotgit", want: errAny},
		{name: "an NTFS short name for .git", entries: []string{"040000 tree " + dotgitTree + "\tgit~1"}, msg: "hasDotgit", want: errAny},
		{name: "a dot-dot entry", entries: []string{"040000 tree " + dotgitTree + "\t.."}, want: errAny},
		{
			name: "symlinks out of the workspace",
			entries: []string{
				"120000 blob " + blob(t, src, "/etc") + "\tetc",
				"120000 blob " + blob(t, src, x.outside) + "\toutside",
				"120000 blob " + blob(t, src, "../../../../../../../../tmp") + "\tup",
				"120000 blob " + blob(t, src, "../task") + "\ttask",
				"100644 blob " + data + "\tREADME",
			},
			after: func(t *testing.T, w *Workspace) {
				for name, target := range map[string]string{"etc": "/etc", "outside": x.outside, "task": "../task"} {
					if got, err := os.Readlink(filepath.Join(w.RepoDir, name)); err != nil || got != target {
						t.Errorf("%s: link to %q, %v; want a symlink to %q, kept as a link", name, got, err, target)
					}
				}
				if b, err := os.ReadFile(filepath.Join(w.TaskDir, "TASK.md")); err != nil || string(b) != "# Add frob\n" {
					t.Errorf("task file %q, %v", b, err)
				}
			},
		},
		{
			name:    "a file that inflates past the checkout limit",
			entries: []string{"100644 blob " + zeros + "\tzeros.bin"},
			limit:   func(o *Options) { o.MaxCheckoutBytes = 32 << 20 },
			want:    ErrCheckoutTooLarge, msg: "more than 33554432 bytes once checked out (Options.MaxCheckoutBytes)",
		},
		{
			name:    "a fetch past the byte limit",
			entries: []string{"100644 blob " + bigRandom + "\tnoise.bin"},
			limit:   func(o *Options) { o.MaxFetchBytes = 1 << 20 },
			want:    ErrFetchTooLarge, msg: "more than 1048576 bytes",
		},
		{
			name:    "too many files",
			entries: []string{"100644 blob " + data + "\ta", "100644 blob " + data + "\tb", "100644 blob " + data + "\tc"},
			limit:   func(o *Options) { o.MaxFiles = 2 },
			want:    ErrCheckoutTooLarge, msg: "more than 2 files (Options.MaxFiles)",
		},
	}
	commits := make([]string, len(tests))
	for i, tt := range tests {
		commits[i] = h.publish(t, src, commitTree(t, src, tt.entries, "", tt.name))
	}
	x.setEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := h.options(t, commits[i])
			if tt.limit != nil {
				tt.limit(&opts)
			}
			w, err := Prepare(ctx, opts)
			x.check(t)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				defer w.Close()
				if got, _ := w.git.line(ctx, "rev-parse", "HEAD"); got != commits[i] {
					t.Errorf("HEAD = %s, want %s", got, commits[i])
				}
				if tt.after != nil {
					tt.after(t, w)
				}
				return
			}
			if err == nil {
				w.Close()
				t.Fatal("Prepare accepted the repository")
			}
			t.Logf("refused: %v", err)
			if !errors.Is(tt.want, errAny) && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Prepare error = %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
			if left, _ := os.ReadDir(opts.Dir); len(left) != 0 {
				t.Errorf("Prepare left %v behind", left)
			}
		})
	}
}

// errAny stands for a refusal by git itself (fsck), whatever its error.
var errAny = errors.New("any error")

func TestUnsafePath(t *testing.T) {
	for _, p := range []string{".git/hooks/x", "a/.GIT/config", "a/git~1/x", "a/.git./x", "a/.git /x", "../x", "a//b", "/abs", "", ".bumper-readonly"} {
		if unsafePath(p) == "" {
			t.Errorf("unsafePath(%q) accepted it", p)
		}
	}
	for _, p := range []string{".gitignore", ".github/workflows/ci.yml", "a/b.git/c", "git~2", ".gitmodules", "a/.bumper-readonly"} {
		if why := unsafePath(p); why != "" {
			t.Errorf("unsafePath(%q) = %q", p, why)
		}
	}
}
