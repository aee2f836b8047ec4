package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/rs/zerolog"
)

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(zerolog.Nop().WithContext(context.Background()))
	t.Cleanup(cancel)
	return ctx
}

// TestPrepareThroughGateway fetches a realistic repository from the emulator through
// the firewall's git gateway, at depth 1 and with full history, and checks the result.
func TestPrepareThroughGateway(t *testing.T) {
	testgate.Slow(t, "clones through a real firewall gateway, seconds")
	h := newGitHost(t)
	ctx := testCtx(t)
	src := scratch(t)
	base := realisticRepo(t, src, 1500, 15<<20, 4)
	h.publish(t, src, base)
	// main is the base, as for a run; it is protected, so the emulator moves it.
	if err := h.e.Git().MoveRef(ctx, owner, repo, "refs/heads/main", base, true); err != nil {
		t.Fatal(err)
	}
	for _, full := range []bool{false, true} {
		t.Run(map[bool]string{false: "depth 1", true: "full history"}[full], func(t *testing.T) {
			opts := h.options(t, base)
			opts.FullHistory = full
			opts.Identity = Identity{Name: "Agent Smith", Email: "smith@agents.invalid"}
			w, err := Prepare(ctx, opts)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			defer w.Close()
			g := w.git
			if got, _ := g.line(ctx, "rev-parse", "HEAD"); got != base {
				t.Errorf("HEAD = %s, want %s", got, base)
			}
			if got, _ := g.line(ctx, "symbolic-ref", "HEAD"); got != "refs/heads/bumper/1-1" {
				t.Errorf("HEAD is on %s, want refs/heads/bumper/1-1", got)
			}
			if got, _ := g.line(ctx, "config", "user.email"); got != "smith@agents.invalid" {
				t.Errorf("user.email = %q", got)
			}
			n, _ := g.line(ctx, "rev-list", "--count", "HEAD")
			_, shallowErr := os.Stat(filepath.Join(w.RepoDir, ".git", "shallow"))
			if full && (n != "4" || shallowErr == nil) || !full && (n != "1" || shallowErr != nil) {
				t.Errorf("history: %s commits, shallow file: %v", n, shallowErr)
			}
			if w.Files != 1500 || w.CheckoutBytes < 10<<20 {
				t.Errorf("Files %d, CheckoutBytes %d", w.Files, w.CheckoutBytes)
			}
			if status, _ := g.run(ctx, nil, 1<<20, "status", "--porcelain"); len(status) != 0 {
				t.Errorf("the checkout is not clean:\n%s", status)
			}
			// An edit of the same size in the very second of the checkout is still a
			// change: checkStat=minimal sees only the second and the size.
			changed := sameSizeEdit(t, w.RepoDir)
			if status, _ := g.line(ctx, "status", "--porcelain"); status != "M "+changed && status != " M "+changed {
				t.Errorf("an edit of the same size right after the checkout: git status says %q", status)
			}
			for name, want := range opts.Task {
				got, err := os.ReadFile(filepath.Join(w.Dir, "task", name))
				if err != nil || string(got) != string(want) {
					t.Errorf("task file %s = %q, %v", name, got, err)
				}
			}
			if _, err := os.Stat(filepath.Join(w.RepoDir, "TASK.md")); err == nil {
				t.Error("a task file is in the repository's tree")
			}
			for _, p := range []string{"FETCH_HEAD", "hooks", "description", "info"} {
				if _, err := os.Stat(filepath.Join(w.RepoDir, ".git", p)); err == nil {
					t.Errorf(".git/%s exists", p)
				}
			}
			assertNoSecret(t, w.Root, h.token)
			if w.FetchedBytes == 0 || len(w.Steps) == 0 {
				t.Errorf("FetchedBytes %d, Steps %v", w.FetchedBytes, w.Steps)
			}
		})
	}
	// The fetch went through the gateway and is in the audit log.
	log := h.waitAudit(t, "git-upload-pack")
	if !strings.Contains(log, `"/git/acme/widgets.git/git-upload-pack"`) || !strings.Contains(log, `"allowed":true`) {
		t.Errorf("the audit log lacks the fetch:\n%.2000s", log)
	}
}

// assertNoSecret fails if the token appears in any file under dir, or in .git/config
// in any form (a URL with credentials, an extra header).
func assertNoSecret(t *testing.T, dir, token string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), token) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "disk", "repo", ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"url", "extraheader", "credential", "token", "@127", "authorization", "remote", "include"} {
		if strings.Contains(strings.ToLower(string(cfg)), bad) {
			t.Errorf(".git/config mentions %q:\n%s", bad, cfg)
		}
	}
}

// TestPrepareRefusals: what Prepare refuses, each with an error that says why, and
// nothing left behind.
func TestPrepareRefusals(t *testing.T) {
	h := newGitHost(t)
	ctx := testCtx(t)
	src := scratch(t)
	base := commitTree(t, src, []string{"100644 blob " + blob(t, src, "hello\n") + "\tREADME"}, "", "base")
	h.publish(t, src, base)
	unpublished := commitTree(t, src, []string{"100644 blob " + blob(t, src, "never pushed\n") + "\tREADME"}, "", "local")
	tests := []struct {
		name   string
		change func(*Options)
		want   error
		msg    string
	}{
		{"commit the host lacks", func(o *Options) { o.Base = unpublished }, ErrCommitNotFound, unpublished},
		{"another repository", func(o *Options) { o.GitURL = strings.Replace(o.GitURL, "/acme/widgets.git", "/stranger/fork.git", 1) }, nil, "[other-repository]"},
		{"credentials in the URL", func(o *Options) { o.GitURL = strings.Replace(o.GitURL, "http://", "http://x-access-token:ghs_x@", 1) }, ErrInvalidOptions, "carries credentials"},
		{"https", func(o *Options) { o.GitURL = strings.Replace(o.GitURL, "http://", "https://", 1) }, ErrInvalidOptions, "not plain http"},
		{"public address", func(o *Options) { o.GitURL = "http://93.184.215.14/git/acme/widgets.git" }, ErrInvalidOptions, "not a loopback or private"},
		{"host name", func(o *Options) { o.GitURL = "http://localhost:3128/git/acme/widgets.git" }, ErrInvalidOptions, "by an IP address"},
		{"not the gateway path", func(o *Options) { o.GitURL = strings.Replace(o.GitURL, "/git/", "/api/github/", 1) }, ErrInvalidOptions, "/git/<owner>/<repo>.git"},
		{"abbreviated commit", func(o *Options) { o.Base = base[:12] }, ErrInvalidOptions, "40 hexadecimal"},
		{"branch name as commit", func(o *Options) { o.Base = "main" }, ErrInvalidOptions, "40 hexadecimal"},
		{"task file with a path", func(o *Options) { o.Task = map[string][]byte{"../repo/x": nil} }, ErrInvalidOptions, "task file name"},
		{"hidden task file", func(o *Options) { o.Task = map[string][]byte{".bashrc": nil} }, ErrInvalidOptions, "task file name"},
		{"identity with a newline", func(o *Options) { o.Identity = Identity{Name: "a\n[core]", Email: "a@b.invalid"} }, ErrInvalidOptions, "line breaks"},
		{"no attempt", func(o *Options) { o.Attempt = 0 }, ErrInvalidOptions, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := h.options(t, base)
			tt.change(&opts)
			w, err := Prepare(ctx, opts)
			if err == nil {
				w.Close()
				t.Fatal("Prepare succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Prepare error = %v; want %v mentioning %q", err, tt.want, tt.msg)
			}
			t.Logf("%v", err)
			if left, _ := os.ReadDir(opts.Dir); len(left) != 0 {
				t.Errorf("Prepare left %v behind", left)
			}
		})
	}
}

// TestVerifyRefuses: the checks at the end of Prepare refuse a HEAD that is not the
// base commit and any configuration Prepare did not write, a credential first.
func TestVerifyRefuses(t *testing.T) {
	h := newGitHost(t)
	ctx := testCtx(t)
	src := scratch(t)
	first := commitTree(t, src, []string{"100644 blob " + blob(t, src, "one\n") + "\tREADME"}, "", "one")
	second := commitTree(t, src, []string{"100644 blob " + blob(t, src, "two\n") + "\tREADME"}, first, "two")
	h.publish(t, src, second)
	tests := []struct {
		name string
		args []string
		want error
	}{
		{"work branch moved", []string{"update-ref", "refs/heads/bumper/1-1", second}, ErrHeadMismatch},
		{"detached elsewhere", []string{"update-ref", "--no-deref", "HEAD", second}, ErrHeadMismatch},
		{"a remote with a token", []string{"config", "remote.origin.url", "http://x-access-token:" + h.token + "@127.0.0.1/git/acme/widgets.git"}, ErrUnsafeConfig},
		{"an extra header", []string{"config", "http.extraHeader", "Authorization: Basic eC1hY2Nlc3MtdG9rZW46"}, ErrUnsafeConfig},
		{"a credential helper", []string{"config", "credential.helper", "store"}, ErrUnsafeConfig},
		{"an include", []string{"config", "include.path", "/etc/passwd"}, ErrUnsafeConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := h.options(t, first)
			opts.FullHistory = true
			w, err := Prepare(ctx, opts)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			defer w.Close()
			if err := w.verify(ctx); err != nil {
				t.Fatalf("verify of a fresh workspace: %v", err)
			}
			if _, err := w.git.run(ctx, fetchConfig, 1<<20, "fetch", "-q", "--no-write-fetch-head", h.userURL, second); err != nil {
				t.Fatal(err)
			}
			if _, err := w.git.run(ctx, nil, 1<<20, tt.args...); err != nil {
				t.Fatal(err)
			}
			err = w.verify(ctx)
			if !errors.Is(err, tt.want) {
				t.Fatalf("verify = %v, want %v", err, tt.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// sameSizeEdit rewrites the first non-empty regular file of the checkout with other
// bytes of the same length, dated now, and returns its path in the repository.
func sameSizeEdit(t *testing.T, dir string) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || found != "":
			return err
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return err
		}
		b[0] ^= 0x20
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
		found, err = filepath.Rel(dir, p)
		return err
	})
	if err != nil || found == "" {
		t.Fatalf("no file to edit: %v", err)
	}
	return found
}
