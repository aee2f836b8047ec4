package environment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/revision"
	"github.com/bumperdev/bumper/internal/testgate"
)

var base = revision.Of([]byte("base image"))

// repo writes files (path → content; a value "-> target" makes a link) into a new
// directory, in the order given.
func repo(t *testing.T, files [][2]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f[0]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(f[1], "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var goFiles = [][2]string{
	{"go.mod", "module example.com/m\n\ngo 1.26\n"},
	{"go.sum", "golang.org/x/sys v0.1.0 h1:abc=\n"},
	{"scripts/setup.sh", "#!/bin/sh\nset -e\nGOTOOLCHAIN=auto go mod download\n"},
	{"cmd/a/go.sum", "a\n"},
	{"cmd/b/go.sum", "b\n"},
	{"README.md", "not an input\n"},
}

func goEnv() repoconfig.Environment {
	return repoconfig.Environment{
		Packages: []string{"golang-go", "ca-certificates"}, Setup: "scripts/setup.sh",
		Inputs:     []string{"go.mod", "go.sum", "cmd/*/go.sum"},
		Allow:      []string{"proxy.golang.org", "sum.golang.org"},
		CachePaths: []string{"/home/agent/go/pkg/mod", "/home/agent/.cache/go-build"},
	}
}

func key(t *testing.T, env repoconfig.Environment, files [][2]string) Identity {
	t.Helper()
	id, err := Key(base, env, repo(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// with returns files with path set to content (added when absent).
func with(files [][2]string, path, content string) [][2]string {
	out := slices.Clone(files)
	for i := range out {
		if out[i][0] == path {
			out[i][1] = content
			return out
		}
	}
	return append(out, [2]string{path, content})
}

// TestKeyIsStable: the same inputs give the same key, whatever order the files were
// written in or the lists are given in.
func TestKeyIsStable(t *testing.T) {
	want := key(t, goEnv(), goFiles)
	if !revision.Valid(want.Digest) {
		t.Fatalf("digest %q", want.Digest)
	}
	reversed := slices.Clone(goFiles)
	slices.Reverse(reversed)
	env := goEnv()
	for _, l := range [][]string{env.Packages, env.Inputs, env.Allow, env.CachePaths} {
		slices.Reverse(l)
	}
	for name, got := range map[string]Identity{
		"files written in reverse": key(t, goEnv(), reversed),
		"lists reversed":           key(t, env, goFiles),
		"untouched file changed":   key(t, goEnv(), with(goFiles, "README.md", "other")),
	} {
		if got.Digest != want.Digest {
			t.Errorf("%s: %s, want %s", name, got.Digest, want.Digest)
		}
	}
	var files []string
	for _, in := range want.Inputs {
		if in.Kind == "file" {
			files = append(files, in.Value)
		}
	}
	if !slices.Equal(files, []string{"cmd/a/go.sum", "cmd/b/go.sum", "go.mod", "go.sum"}) {
		t.Errorf("input files %v", files)
	}
	if s := want.Inputs[len(want.Inputs)-1].String(); !strings.HasPrefix(s, "file go.sum (") || !strings.Contains(s, "bytes, sha256:") {
		t.Errorf("an input prints as %q", s)
	}
}

// TestKeyChanges: a change to any input gives another key.
func TestKeyChanges(t *testing.T) {
	want := key(t, goEnv(), goFiles).Digest
	tests := []struct {
		name  string
		env   func(*repoconfig.Environment)
		files [][2]string
		base  string
	}{
		{name: "one byte of go.mod", files: with(goFiles, "go.mod", "module example.com/m\n\ngo 1.27\n")},
		{name: "go.sum", files: with(goFiles, "go.sum", "")},
		{name: "a file a pattern matches", files: with(goFiles, "cmd/b/go.sum", "c\n")},
		{name: "a new file a pattern matches", files: with(goFiles, "cmd/c/go.sum", "c\n")},
		{name: "the setup script", files: with(goFiles, "scripts/setup.sh", "#!/bin/sh\nset -e\nGOTOOLCHAIN=auto go mod download \n")},
		{name: "the setup's path", files: with(goFiles, "setup.sh", goFiles[2][1]), env: func(e *repoconfig.Environment) { e.Setup = "setup.sh" }},
		{name: "a package more", env: func(e *repoconfig.Environment) { e.Packages = append(e.Packages, "git") }},
		{name: "a package less", env: func(e *repoconfig.Environment) { e.Packages = e.Packages[:1] }},
		{name: "a cache path", env: func(e *repoconfig.Environment) { e.CachePaths[0] = "/home/agent/go/pkg" }},
		{name: "a host", env: func(e *repoconfig.Environment) { e.Allow = append(e.Allow, "golang.org") }},
		{name: "an input less", env: func(e *repoconfig.Environment) { e.Inputs = e.Inputs[:2] }},
		{name: "no setup", env: func(e *repoconfig.Environment) { *e = repoconfig.Environment{Packages: e.Packages} }},
		{name: "the base image", base: revision.Of([]byte("another base image"))},
	}
	seen := map[string]string{want: "the original"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, files, b := goEnv(), goFiles, base
			if tc.env != nil {
				tc.env(&env)
			}
			if tc.files != nil {
				files = tc.files
			}
			if tc.base != "" {
				b = tc.base
			}
			id, err := Key(b, env, repo(t, files))
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := seen[id.Digest]; dup {
				t.Fatalf("same key as %s", other)
			}
			seen[id.Digest] = tc.name
		})
	}
}

// TestKeyLengthPrefixed: inputs that concatenate to the same bytes keep different keys.
func TestKeyLengthPrefixed(t *testing.T) {
	pairs := []struct {
		name   string
		a, b   repoconfig.Environment
		fa, fb [][2]string
	}{
		{"package boundary", repoconfig.Environment{Packages: []string{"ab", "cd"}}, repoconfig.Environment{Packages: []string{"abc", "d"}}, nil, nil},
		{"package into setup", repoconfig.Environment{Packages: []string{"ab"}, Setup: "s"}, repoconfig.Environment{Packages: []string{"a"}, Setup: "bs"},
			[][2]string{{"s", "x"}}, [][2]string{{"bs", "x"}}},
		{"setup path into content", repoconfig.Environment{Setup: "ab"}, repoconfig.Environment{Setup: "a"}, [][2]string{{"ab", "c"}}, [][2]string{{"a", "bc"}}},
		{"file contents", repoconfig.Environment{Setup: "s", Inputs: []string{"f*"}}, repoconfig.Environment{Setup: "s", Inputs: []string{"f*"}},
			[][2]string{{"s", ""}, {"f1", "ab"}, {"f2", "c"}}, [][2]string{{"s", ""}, {"f1", "a"}, {"f2", "bc"}}},
		{"file path into content", repoconfig.Environment{Setup: "s", Inputs: []string{"*.x"}}, repoconfig.Environment{Setup: "s", Inputs: []string{"*.x"}},
			[][2]string{{"s", ""}, {"a.x", "b.xc"}}, [][2]string{{"s", ""}, {"a.xb.x", "c"}}},
		{"cache path into allow", repoconfig.Environment{Setup: "s", CachePaths: []string{"/home/agent/a"}, Allow: []string{"b.org"}},
			repoconfig.Environment{Setup: "s", CachePaths: []string{"/home/agent/ab.org"}}, [][2]string{{"s", ""}}, [][2]string{{"s", ""}}},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			if ka, kb := key(t, p.a, p.fa), key(t, p.b, p.fb); ka.Digest == kb.Digest {
				t.Fatalf("both give %s", ka.Digest)
			}
		})
	}
}

// TestKeyRefuses: what an attacker who writes the repository would try, and inputs
// that cannot be read within the limits.
func TestKeyRefuses(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	setupOnly := repoconfig.Environment{Setup: "scripts/setup.sh"}
	inputs := func(in ...string) repoconfig.Environment {
		return repoconfig.Environment{Setup: "scripts/setup.sh", Inputs: in}
	}
	tests := []struct {
		name  string
		env   repoconfig.Environment
		files [][2]string
		want  error
		msg   string
	}{
		{"input linked out of the tree", inputs("go.mod"), with(goFiles, "go.mod", "-> "+secret), ErrLink, "go.mod"},
		{"setup linked out of the tree", setupOnly, with(goFiles, "scripts/setup.sh", "-> "+secret), ErrLink, "scripts/setup.sh"},
		{"directory linked out of the tree", inputs("etc/shadow"), with(goFiles, "etc", "-> "+filepath.Dir(secret)), ErrLink, "etc"},
		{"pattern matching a link", inputs("*.mod"), with(goFiles, "evil.mod", "-> "+secret), ErrLink, "evil.mod"},
		{"pattern through a linked directory", inputs("*/shadow"), with(goFiles, "etc", "-> "+filepath.Dir(secret)), nil, "matches no file"},
		{"link inside the tree", inputs("go.sum"), with(goFiles, "go.sum", "-> go.mod"), ErrLink, "go.sum"},
		{"relative link climbing out", inputs("x"), with(goFiles, "x", "-> ../../../../../../../../etc/passwd"), ErrLink, "x"},
		{"absolute path", inputs(secret), goFiles, ErrBadInput, "not a clean path"},
		{"dot-dot path", inputs("../shadow"), goFiles, ErrBadInput, "not a clean path"},
		{"oversized input", inputs("big"), with(goFiles, "big", ""), ErrTooLarge, "16 MiB"},
		{"missing input", inputs("package-lock.json"), goFiles, ErrNotFound, "package-lock.json"},
		{"missing setup", repoconfig.Environment{Setup: "setup.sh"}, goFiles, ErrNotFound, "setup.sh"},
		{"pattern matching nothing", inputs("*.lock"), goFiles, nil, "matches no file"},
		{"a directory", inputs("cmd"), goFiles, ErrNotFile, "cmd"},
		{"through a file", inputs("go.mod/x"), goFiles, ErrNotFound, "go.mod/x"},
		{"git's directory", inputs(".git/config"), with(goFiles, ".git/config", "[core]"), ErrNotFound, ".git/config"},
		{"a bad base", repoconfig.Environment{Packages: []string{"git"}}, goFiles, ErrBadInput, "base image digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := repo(t, tc.files)
			if tc.name == "oversized input" {
				if err := os.Truncate(filepath.Join(dir, "big"), MaxFileBytes+1); err != nil {
					t.Fatal(err)
				}
			}
			b := base
			if tc.name == "a bad base" {
				b = "sha256:abc"
			}
			id, err := Key(b, tc.env, dir)
			if err == nil {
				t.Fatalf("key %s of %+v", id.Digest, id.Inputs)
			}
			if (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if strings.Contains(err.Error(), "$6$") {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

// TestKeyRefusesFIFO: a FIFO named as an input is refused, never opened (which would
// block).
func TestKeyRefusesFIFO(t *testing.T) {
	dir := repo(t, goFiles)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := Key(base, repoconfig.Environment{Setup: "scripts/setup.sh", Inputs: []string{"pipe"}}, dir); !errors.Is(err, ErrNotFile) {
		t.Fatalf("error %v, want ErrNotFile", err)
	}
}

// TestKeyTooManyFiles: a pattern may expand to MaxFiles files, no more.
func TestKeyTooManyFiles(t *testing.T) {
	dir := repo(t, goFiles)
	for i := range MaxFiles + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.lock", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := repoconfig.Environment{Setup: "scripts/setup.sh", Inputs: []string{"*.lock"}}
	if _, err := Key(base, env, dir); !errors.Is(err, ErrTooMany) {
		t.Fatalf("error %v, want ErrTooMany", err)
	}
	if err := os.Remove(filepath.Join(dir, "f0000.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := Key(base, env, dir); err != nil {
		t.Fatalf("%d files: %v", MaxFiles, err)
	}
}

// TestKeyAtGit: a commit's objects give the key its checkout gives, and a link in the
// commit is refused the same way.
func TestKeyAtGit(t *testing.T) {
	testgate.Command(t, "git", "git")
	files := with(goFiles, "vendor", "-> /etc")
	dir := repo(t, files)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	commit := git("rev-parse", "HEAD")
	// The working tree moves on; the commit is what counts.
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := GitTree{Repo: dir, Commit: commit}
	got, err := KeyAt(context.Background(), base, goEnv(), tree)
	if err != nil {
		t.Fatal(err)
	}
	if want := key(t, goEnv(), goFiles); got.Digest != want.Digest {
		t.Fatalf("the commit gives %s, its checkout %s", got.Digest, want.Digest)
	}
	env := goEnv()
	env.Inputs = append(env.Inputs, "vendor/passwd")
	if _, err := KeyAt(context.Background(), base, env, tree); !errors.Is(err, ErrLink) {
		t.Fatalf("a link in the commit: %v, want ErrLink", err)
	}
	env.Inputs = []string{"nothing.lock"}
	if _, err := KeyAt(context.Background(), base, env, tree); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing file in the commit: %v, want ErrNotFound", err)
	}
	if _, err := KeyAt(context.Background(), base, goEnv(), GitTree{Repo: dir, Commit: "HEAD"}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("a commit that is not an id: %v", err)
	}
}

// TestDirTreeRead: the checkout's Read refuses links on its own too, and os.Root keeps
// a path through a linked directory inside the tree: the second wall, should the walk
// above it ever let a link through.
func TestDirTreeRead(t *testing.T) {
	secretDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "shadow"), []byte("root:$6$secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := repo(t, [][2]string{{"link", "-> " + filepath.Join(secretDir, "shadow")}, {"etc", "-> " + secretDir}, {"inside", "-> ok"}, {"ok", "fine"}})
	tree, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for _, name := range []string{"link", "etc/shadow", "inside"} {
		b, err := tree.Read(context.Background(), name, MaxFileBytes)
		if err == nil || strings.Contains(string(b), "secret") {
			t.Errorf("Read(%s) = %q, %v", name, b, err)
		}
	}
	if _, err := tree.List(context.Background(), "etc"); err == nil {
		t.Error("List went through a linked directory")
	}
	if b, err := tree.Read(context.Background(), "ok", MaxFileBytes); err != nil || string(b) != "fine" {
		t.Errorf("Read(ok) = %q, %v", b, err)
	}
}

// TestIn: an environment scoped to a repository is another key than the same inputs
// unscoped or in another repository (the attacker's repository copies the victim's
// declared inputs exactly, to leave its image where the victim's runs look), and the
// same repository written in another case is the same key.
func TestIn(t *testing.T) {
	id := key(t, goEnv(), goFiles)
	victim := id.In("acme/widgets")
	tests := []struct {
		name string
		got  Identity
		same bool
	}{
		{"unscoped", id, false},
		{"another owner", id.In("evil/widgets"), false},
		{"another name", id.In("acme/widgets2"), false},
		{"a prefix of the name", id.In("acme/widget"), false},
		{"another case", id.In("ACME/Widgets"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.got.Digest == victim.Digest) != tt.same {
				t.Fatalf("%s vs the victim's %s: same %v, want %v", tt.got.Digest, victim.Digest, !tt.same, tt.same)
			}
		})
	}
	if last := victim.Inputs[len(victim.Inputs)-1]; last.String() != "repository acme/widgets" || len(victim.Inputs) != len(id.Inputs)+1 {
		t.Fatalf("inputs end with %v", last)
	}
	if !revision.Valid(victim.Digest) {
		t.Fatalf("digest %q", victim.Digest)
	}
}
