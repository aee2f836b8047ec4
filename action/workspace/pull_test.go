package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// TestPrepareOnPullRequest: a fix or review run starts at its pull request's head on
// the pull request's branch, fetched through the gateway, and its work comes back on
// top of that head; a review workspace adds read-only trees of the base (what the
// reviewer's program runs from) and of the head; a branch that moved since dispatch,
// or a branch that is not this issue's, is refused.
func TestPrepareOnPullRequest(t *testing.T) {
	h := newGitHost(t)
	ctx := testCtx(t)
	src := scratch(t)
	readme := "100644 blob " + blob(t, src, "hello\n") + "\tREADME"
	base := commitTree(t, src, []string{readme, "100644 blob " + blob(t, src, "echo base reviewer\n") + "\treviewer.sh"}, "", "base")
	h.publish(t, src, base)
	head := commitTree(t, src, []string{readme, "100644 blob " + blob(t, src, "echo approve everything\n") + "\treviewer.sh"}, base, "the agent's")
	hostGit(t, src, nil, "push", "-q", h.userURL, head+":refs/heads/bumper/1-1")
	pull := func(t *testing.T, review bool) Options {
		o := h.options(t, base)
		o.Attempt, o.Branch, o.Start, o.Review = 2, "bumper/1-1", head, review
		return o
	}

	t.Run("fix: the pull request's branch at its head, work on top of it", func(t *testing.T) {
		w, err := Prepare(ctx, pull(t, false))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if got := hostGit(t, w.RepoDir, nil, "symbolic-ref", "HEAD"); got != "refs/heads/bumper/1-1" {
			t.Fatalf("HEAD on %s", got)
		}
		if got := hostGit(t, w.RepoDir, nil, "rev-parse", "HEAD"); got != head || w.Start != head || w.Base != base {
			t.Fatalf("HEAD %s, start %s, base %s", got, w.Start, w.Base)
		}
		if argv := strings.Join(w.BundleCommand(), " "); !strings.HasSuffix(argv, "refs/heads/bumper/1-1 ^"+head) {
			t.Fatalf("bundle command %s", argv)
		}
		if w.BaseDir != "" || w.HeadDir != "" {
			t.Fatalf("a fix workspace has review trees %q %q", w.BaseDir, w.HeadDir)
		}
		repo := guestCopy(t, w)
		writeFile(t, filepath.Join(repo, "fix.txt"), "fixed\n")
		hostGit(t, repo, nil, "add", "fix.txt")
		hostGit(t, repo, nil, "commit", "-q", "-m", "Fix failing checks (#1)")
		guestBundle(t, w, repo)
		res, err := w.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Base != head || res.Commits != 1 || res.Diff.FilesChanged != 1 || res.Diff.Files[0].Path != "fix.txt" {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("review: read-only trees of the base and the head", func(t *testing.T) {
		w, err := Prepare(ctx, pull(t, true))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for dir, want := range map[string]string{w.BaseDir: "echo base reviewer\n", w.HeadDir: "echo approve everything\n"} {
			got, err := os.ReadFile(filepath.Join(dir, "reviewer.sh"))
			if err != nil || string(got) != want {
				t.Fatalf("%s/reviewer.sh = %q, %v; want %q", dir, got, err, want)
			}
			if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
				t.Fatalf("%s holds a .git", dir)
			}
		}
		for _, dir := range []string{w.BaseDir, w.HeadDir, w.TaskDir} {
			if fi, err := os.Lstat(filepath.Join(dir, agentproto.ReadOnlyMarker)); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("%s is not marked read-only: %v", dir, err)
			}
		}
		if filepath.Dir(w.BaseDir) != w.Dir || filepath.Base(w.BaseDir) != BaseDirName || filepath.Base(w.HeadDir) != HeadDirName {
			t.Fatalf("trees at %s and %s, want directly in %s", w.BaseDir, w.HeadDir, w.Dir)
		}
		if err := w.AddTaskFile("pr.diff", []byte("diff\n")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"pr.diff", agentproto.ReadOnlyMarker, "../x"} {
			if err := w.AddTaskFile(name, nil); err == nil {
				t.Fatalf("AddTaskFile(%q) wrote over or outside the task files", name)
			}
		}
	})
	t.Run("a branch that moved since dispatch", func(t *testing.T) {
		moved := commitTree(t, src, []string{readme}, head, "a human's push")
		hostGit(t, src, nil, "push", "-q", h.userURL, moved+":refs/heads/bumper/1-1")
		defer hostGit(t, src, nil, "push", "-q", "-f", h.userURL, head+":refs/heads/bumper/1-1")
		o := pull(t, false)
		w, err := Prepare(ctx, o)
		if err == nil {
			w.Close()
			t.Fatal("Prepare started on a branch that moved")
		}
		if !errors.Is(err, ErrBranchMoved) || !strings.Contains(err.Error(), "moved from "+head+" to "+moved) || !strings.Contains(err.Error(), "a human pushed?") {
			t.Fatalf("error %v", err)
		}
		if left, _ := os.ReadDir(o.Dir); len(left) != 0 {
			t.Errorf("Prepare left %v behind", left)
		}
	})
	for _, tt := range []struct {
		name   string
		change func(*Options)
	}{
		{"another issue's branch", func(o *Options) { o.Branch = "bumper/2-1" }},
		{"main", func(o *Options) { o.Branch = "main" }},
		{"a branch spelled otherwise", func(o *Options) { o.Branch = "bumper/1-01" }},
		{"an implement run on another attempt's branch", func(o *Options) { o.Start, o.Branch = "", "bumper/1-1" }},
		{"an abbreviated start", func(o *Options) { o.Start = head[:12] }},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			o := pull(t, false)
			tt.change(&o)
			if w, err := Prepare(ctx, o); !errors.Is(err, ErrInvalidOptions) {
				if w != nil {
					w.Close()
				}
				t.Fatalf("Prepare = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// TestBranchAttempt: only bumper/<issue>-<attempt> of the issue, written as Branch
// writes it.
func TestBranchAttempt(t *testing.T) {
	for _, tt := range []struct {
		branch string
		want   int
	}{
		{"bumper/7-1", 1}, {"bumper/7-12", 12}, {"bumper/7-0", 0}, {"bumper/7-01", 0}, {"bumper/7-+1", 0},
		{"bumper/17-1", 0}, {"bumper/7-1/x", 0}, {"refs/heads/bumper/7-1", 0}, {"main", 0}, {"", 0},
	} {
		n, ok := BranchAttempt(tt.branch, 7)
		if n != tt.want || ok != (tt.want > 0) {
			t.Errorf("BranchAttempt(%q) = %d, %v; want %d", tt.branch, n, ok, tt.want)
		}
	}
}
