package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

// updateHost is a pull request's history and a base branch that moved, on the
// emulator's git server behind the firewall:
//
//	B0 ── B ── M1 ───── M2 (the base branch's new head: M1 and a side branch S1 off B0)
//	 \     \           /
//	  \     A ── P    /   (the pull request: Bumper's A, a person's P; its head is P)
//	   S1 ────────────
//
// M1 changes the line of widgets.sh that A changed: merging M2 into P conflicts there.
// M3 (on B, a file of its own) merges cleanly.
type updateHost struct {
	h                          *gitHost
	src                        string
	b0, base, a, p, m1, m2, m3 string
}

func newUpdateHost(t *testing.T) *updateHost {
	t.Helper()
	h := newGitHost(t)
	src := scratch(t)
	u := &updateHost{h: h, src: src}
	file := func(name, content string) string { return "100644 blob " + blob(t, src, content) + "\t" + name }
	readme := file("README", "hello\n")
	u.b0 = commitTree(t, src, []string{readme, file("widgets.sh", "echo 3\n")}, "", "B0")
	u.base = commitTree(t, src, []string{readme, file("widgets.sh", "echo 3\n"), file("lib.sh", "x\n")}, u.b0, "B")
	u.a = commitTree(t, src, []string{readme, file("widgets.sh", "echo 4\n"), file("lib.sh", "x\n")}, u.base, "Bumper's: count to 4")
	u.p = commitTree(t, src, []string{readme, file("widgets.sh", "echo 4\n"), file("lib.sh", "x\n"), file("NOTES", "a person's note\n")}, u.a, "A person's note")
	s1 := commitTree(t, src, []string{readme, file("widgets.sh", "echo 3\n"), file("side.txt", "side\n")}, u.b0, "S1, off B0")
	u.m1 = commitTree(t, src, []string{readme, file("widgets.sh", "echo 5\n"), file("lib.sh", "x\n")}, u.base, "M1: count to 5")
	tree := hostGit(t, src, []byte(strings.Join([]string{readme, file("widgets.sh", "echo 5\n"), file("lib.sh", "x\n"), file("side.txt", "side\n")}, "\n")+"\n"), "mktree")
	u.m2 = hostGit(t, src, nil, "commit-tree", tree, "-p", u.m1, "-p", s1, "-m", "M2: merge the side branch")
	u.m3 = commitTree(t, src, []string{readme, file("widgets.sh", "echo 3\n"), file("lib.sh", "x\n"), file("other.txt", "other\n")}, u.base, "M3: another file")
	for _, c := range []string{u.base, u.m2, u.m3} {
		h.publish(t, src, c)
	}
	hostGit(t, src, nil, "push", "-q", h.userURL, u.p+":refs/heads/bumper/1-1")
	return u
}

// options are an update run's: attempt 2 on the pull request's branch at P, merging to.
func (u *updateHost) options(t *testing.T, to string) Options {
	o := u.h.options(t, u.base)
	o.Attempt, o.Branch, o.Start, o.UpdateTo = 2, "bumper/1-1", u.p, to
	return o
}

// guestMerge runs MergeScript in the guest copy as the VM does (in the repository, with
// the repository's identity) and returns its standard output.
func guestMerge(t *testing.T, repo, to string) []byte {
	t.Helper()
	cmd := exec.Command("sh", "-c", MergeScript)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "HOME="+repo, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		MergeEnvUpdateTo+"="+to, MergeEnvMessage+"=Merge the base branch's head (issue 1)")
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the merge script: %v\n%s", err, errb.String())
	}
	return out
}

// TestUpdateMerge: an update run fetches the base branch's new head beside the pull
// request's (through a base fetched at depth 1, with a side branch off an older commit
// merged into it), merges it in the guest with a merge commit (clean: committed;
// conflicting: left with the unmerged paths named), and its work comes back with only
// the run's own commits: the merge and what the agent added, never the base branch's.
func TestUpdateMerge(t *testing.T) {
	testgate.Slow(t, "merges in many git repositories, seconds")
	u := newUpdateHost(t)
	ctx := testCtx(t)
	t.Run("a conflict, resolved by the agent", func(t *testing.T) {
		w, err := Prepare(ctx, u.options(t, u.m2))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if w.UpdateTo != u.m2 || !strings.HasSuffix(strings.Join(w.BundleCommand(), " "), "^"+u.p+" ^"+u.m2) {
			t.Fatalf("UpdateTo %s, bundle command %v", w.UpdateTo, w.BundleCommand())
		}
		if typ, _ := w.git.line(ctx, "cat-file", "-t", u.m2); typ != "commit" {
			t.Fatalf("the base branch's head was not fetched: %q", typ)
		}
		repo := guestCopy(t, w)
		m, err := ParseMerge(guestMerge(t, repo, u.m2))
		if err != nil || m.Clean || strings.Join(m.Conflicts, ",") != "widgets.sh" {
			t.Fatalf("ParseMerge = %+v, %v; want a conflict in widgets.sh", m, err)
		}
		if got, _ := os.ReadFile(filepath.Join(repo, "widgets.sh")); !strings.Contains(string(got), "<<<<<<< ") {
			t.Fatalf("widgets.sh holds no conflict markers:\n%s", got)
		}
		writeFile(t, filepath.Join(repo, "widgets.sh"), "echo 5 # and then 4\n")
		hostGit(t, repo, nil, "add", "-A")
		hostGit(t, repo, nil, "commit", "-q", "--no-edit")
		writeFile(t, filepath.Join(repo, "NOTES"), "a person's note\nand the agent's\n")
		hostGit(t, repo, nil, "commit", "-q", "-am", "tidy")
		guestBundle(t, w, repo)
		r, err := w.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Commits != 2 || r.Base != u.p {
			t.Fatalf("Result = %+v; want the merge and one commit on top of %s", r, u.p)
		}
		merge := hostGit(t, w.RepoDir, nil, "rev-parse", r.Head+"^")
		if parents := hostGit(t, w.RepoDir, nil, "log", "-1", "--format=%P", merge); parents != u.p+" "+u.m2 {
			t.Fatalf("the merge's parents are %s; want the pull request's head, then the base branch's", parents)
		}
		if left, err := w.ConflictMarkers(ctx, r.Head, m.Conflicts); err != nil || len(left) != 0 {
			t.Fatalf("ConflictMarkers = %v, %v on a resolved merge", left, err)
		}
	})
	t.Run("conflict markers committed", func(t *testing.T) {
		w, err := Prepare(ctx, u.options(t, u.m2))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		repo := guestCopy(t, w)
		m, err := ParseMerge(guestMerge(t, repo, u.m2))
		if err != nil {
			t.Fatal(err)
		}
		// What the runner's commit step does with a merge the agent left as it was.
		hostGit(t, repo, nil, "add", "-A")
		hostGit(t, repo, nil, "commit", "-q", "--no-edit")
		guestBundle(t, w, repo)
		r, err := w.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if left, err := w.ConflictMarkers(ctx, r.Head, append(m.Conflicts, "README", "no/such/file")); err != nil || strings.Join(left, ",") != "widgets.sh" {
			t.Fatalf("ConflictMarkers = %v, %v; want widgets.sh", left, err)
		}
	})
	t.Run("a clean merge, committed", func(t *testing.T) {
		w, err := Prepare(ctx, u.options(t, u.m3))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		repo := guestCopy(t, w)
		m, err := ParseMerge(guestMerge(t, repo, u.m3))
		if err != nil || !m.Clean || len(m.Conflicts) != 0 {
			t.Fatalf("ParseMerge = %+v, %v; want a clean merge", m, err)
		}
		if head := hostGit(t, repo, nil, "rev-parse", "HEAD"); head != m.Head {
			t.Fatalf("HEAD %s, the merge said %s", head, m.Head)
		}
		if parents := hostGit(t, repo, nil, "log", "-1", "--format=%P|%s|%an", m.Head); parents != u.p+" "+u.m3+"|Merge the base branch's head (issue 1)|Bumper Agent" {
			t.Fatalf("the merge commit: %s", parents)
		}
		guestBundle(t, w, repo)
		r, err := w.Result(ctx)
		if err != nil || r.Commits != 1 || r.Head != m.Head {
			t.Fatalf("Result = %+v, %v", r, err)
		}
	})
	t.Run("nothing to merge", func(t *testing.T) {
		w, err := Prepare(ctx, u.options(t, u.a))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if m, err := ParseMerge(guestMerge(t, guestCopy(t, w), u.a)); !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), "nothing to update") {
			t.Fatalf("ParseMerge = %+v, %v", m, err)
		}
	})
	for _, tt := range []struct {
		name  string
		guest func(t *testing.T, repo string)
		want  string
	}{
		{"the merge aborted, other work committed", func(t *testing.T, repo string) {
			hostGit(t, repo, nil, "merge", "--abort")
			writeFile(t, filepath.Join(repo, "widgets.sh"), "echo 5\n")
			hostGit(t, repo, nil, "commit", "-q", "-am", "just take theirs")
		}, "does not hold " + "M2"},
		{"rebuilt on the base branch", func(t *testing.T, repo string) {
			hostGit(t, repo, nil, "merge", "--abort")
			hostGit(t, repo, nil, "reset", "-q", "--hard", "M2")
			writeFile(t, filepath.Join(repo, "NOTES"), "a person's note\n")
			hostGit(t, repo, nil, "add", "NOTES")
			hostGit(t, repo, nil, "commit", "-q", "-m", "the note again")
			hostGit(t, repo, nil, "merge", "-q", "-s", "ours", "--no-edit", "P")
		}, "not on"},
		{"merged the other way round", func(t *testing.T, repo string) {
			hostGit(t, repo, nil, "merge", "--abort")
			hostGit(t, repo, nil, "checkout", "-q", "-B", "tmp", "M2")
			hostGit(t, repo, nil, "merge", "-q", "-X", "theirs", "--no-edit", "P")
			hostGit(t, repo, nil, "branch", "-f", "bumper/1-1", "tmp")
			hostGit(t, repo, nil, "checkout", "-q", "bumper/1-1")
		}, "not on"},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			w, err := Prepare(ctx, u.options(t, u.m2))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			repo := guestCopy(t, w)
			hostGit(t, repo, nil, "update-ref", "refs/tags/M2", u.m2)
			hostGit(t, repo, nil, "update-ref", "refs/tags/P", u.p)
			if _, err := ParseMerge(guestMerge(t, repo, u.m2)); err != nil {
				t.Fatal(err)
			}
			tt.guest(t, repo)
			guestBundle(t, w, repo)
			r, err := w.Result(ctx)
			if !errors.Is(err, ErrNotMerged) || !strings.Contains(err.Error(), strings.NewReplacer("M2", u.m2).Replace(tt.want)) {
				t.Fatalf("Result = %+v, %v; want ErrNotMerged saying %q", r, err, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name   string
		change func(*Options)
	}{
		{"an abbreviated commit", func(o *Options) { o.UpdateTo = u.m2[:12] }},
		{"a run that starts at the base", func(o *Options) { o.Start, o.Branch, o.Attempt = "", "", 1 }},
		{"the start itself", func(o *Options) { o.UpdateTo = u.p }},
		{"a review run", func(o *Options) { o.Review = true }},
	} {
		t.Run("options refused: "+tt.name, func(t *testing.T) {
			o := u.options(t, u.m2)
			tt.change(&o)
			if w, err := Prepare(ctx, o); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "update-to commit") {
				if w != nil {
					w.Close()
				}
				t.Fatalf("Prepare = %v, want ErrInvalidOptions about the update-to commit", err)
			}
		})
	}
}

// TestParseMerge: what the merge step says, and what it must not.
func TestParseMerge(t *testing.T) {
	head := strings.Repeat("a", 40)
	for _, tt := range []struct {
		out, want string
	}{
		{"bumper-merge: clean " + head + "\n", "clean " + head},
		{"bumper-merge: conflicted\na.go\x00dir/b c.txt\x00", "conflicts a.go|dir/b c.txt"},
		{"bumper-merge: none 0\n", "nothing to update"},
		{"bumper-merge: none 128\n", "started no merge (128)"},
		{"bumper-merge: conflicted\n", "named no unmerged path"},
		{"bumper-merge: clean HEAD\n", "the merge step said"},
		{"Auto-merging widgets.sh\n", "the merge step said"},
		{"", "the merge step said"},
	} {
		m, err := ParseMerge([]byte(tt.out))
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case m.Clean:
			got = "clean " + m.Head
		default:
			got = "conflicts " + strings.Join(m.Conflicts, "|")
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("ParseMerge(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}
