package workspace

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/internal/testgate"
)

// guestCopy stands in for the VM: a copy of the workspace as the workspace disk holds
// it, where the "agent" commits with the machine's git. It returns the copy's repo.
func guestCopy(t *testing.T, w *Workspace) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vm")
	if out, err := exec.Command("cp", "-a", w.Dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return filepath.Join(dir, RepoDirName)
}

// guestBundle runs the workspace's BundleCommand in the guest copy, with the guest's
// paths mapped to the copy and w.OutDir.
func guestBundle(t *testing.T, w *Workspace, repoDir string) {
	t.Helper()
	argv := w.BundleCommand()
	args := make([]string, 0, len(argv))
	for _, a := range argv[1:] {
		switch a {
		case GuestRepo:
			a = repoDir
		case GuestBundle:
			a = filepath.Join(w.OutDir, BundleName)
		}
		args = append(args, a)
	}
	hostGit(t, repoDir, nil, args...)
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestResult: the agent's commits come back as a bundle in /out; Result takes exactly
// the work branch descending from the base, and refuses every other bundle, under a
// hostile environment.
func TestResult(t *testing.T) {
	testgate.Slow(t, "many git repositories, seconds")
	h := newGitHost(t)
	ctx := testCtx(t)
	src := scratch(t)
	writeFile(t, filepath.Join(src, "README.md"), "# widgets\n\nline two\nline three\n")
	writeFile(t, filepath.Join(src, "old.txt"), "a\nb\n")
	writeFile(t, filepath.Join(src, "src/main.go"), "package main\n")
	hostGit(t, src, nil, "add", ".")
	hostGit(t, src, nil, "commit", "-q", "-m", "base")
	base := h.publish(t, src, hostGit(t, src, nil, "rev-parse", "HEAD"))
	x := newHostile(t)

	type testCase struct {
		name  string
		guest func(t *testing.T, w *Workspace, repo string) // what the "VM" leaves in w.OutDir
		limit func(*Options)
		want  error
		msg   string
		check func(t *testing.T, r *Result)
	}
	commit := func(t *testing.T, repo, msg string) {
		hostGit(t, repo, nil, "add", "-A")
		hostGit(t, repo, nil, "commit", "-q", "-m", msg)
	}
	bundlePath := func(w *Workspace) string { return filepath.Join(w.OutDir, BundleName) }
	tests := []testCase{
		{
			name: "two commits on the work branch",
			guest: func(t *testing.T, w *Workspace, repo string) {
				writeFile(t, filepath.Join(repo, "README.md"), "# widgets\n\nline 2\nline three\nline four\n")
				writeFile(t, filepath.Join(repo, ".gitattributes"), "* diff=evil filter=evil\n")
				commit(t, repo, "one")
				os.Remove(filepath.Join(repo, "old.txt"))
				writeFile(t, filepath.Join(repo, "logo.png"), "\x89PNG\x00\x01\x02")
				commit(t, repo, "two")
				guestBundle(t, w, repo)
			},
			check: func(t *testing.T, r *Result) {
				want := evidence.NewDiffStat([]evidence.FileStat{
					{Path: ".gitattributes", Insertions: 1},
					{Path: "README.md", Insertions: 2, Deletions: 1},
					{Path: "logo.png", Binary: true},
					{Path: "old.txt", Deletions: 2},
				})
				if r.Commits != 2 || r.Base != base || len(r.Head) != 40 || !reflect.DeepEqual(r.Diff, want) {
					t.Errorf("Result = %+v; want 2 commits and diff %+v", r, want)
				}
			},
		},
		{name: "no bundle", guest: func(*testing.T, *Workspace, string) {}, want: ErrNoBundle},
		{
			name: "another ref as well",
			guest: func(t *testing.T, w *Workspace, repo string) {
				writeFile(t, filepath.Join(repo, "x"), "x")
				commit(t, repo, "x")
				hostGit(t, repo, nil, "branch", "-f", "main")
				hostGit(t, repo, nil, "bundle", "create", "-q", bundlePath(w), "refs/heads/"+w.Branch, "refs/heads/main", "^"+base)
			},
			want: ErrBadBundle, msg: "it must carry exactly refs/heads/bumper/1-1",
		},
		{
			name: "another branch",
			guest: func(t *testing.T, w *Workspace, repo string) {
				hostGit(t, repo, nil, "checkout", "-q", "-b", "bumper/1-2")
				writeFile(t, filepath.Join(repo, "x"), "x")
				commit(t, repo, "x")
				hostGit(t, repo, nil, "bundle", "create", "-q", bundlePath(w), "refs/heads/bumper/1-2", "^"+base)
			},
			want: ErrBadBundle, msg: "it must carry exactly refs/heads/bumper/1-1",
		},
		{
			name: "a history that does not descend from the base",
			guest: func(t *testing.T, w *Workspace, repo string) {
				hostGit(t, repo, nil, "checkout", "-q", "--orphan", "tmp")
				writeFile(t, filepath.Join(repo, "x"), "x")
				commit(t, repo, "unrelated")
				hostGit(t, repo, nil, "branch", "-f", w.Branch)
				hostGit(t, repo, nil, "bundle", "create", "-q", bundlePath(w), "refs/heads/"+w.Branch)
			},
			want: ErrBadBundle, msg: "does not descend from the base commit",
		},
		{
			name: "prerequisites the host lacks",
			guest: func(t *testing.T, w *Workspace, repo string) {
				writeFile(t, filepath.Join(repo, "x"), "1")
				commit(t, repo, "one")
				first := hostGit(t, repo, nil, "rev-parse", "HEAD")
				writeFile(t, filepath.Join(repo, "x"), "2")
				commit(t, repo, "two")
				hostGit(t, repo, nil, "bundle", "create", "-q", bundlePath(w), "refs/heads/"+w.Branch, "^"+first)
			},
			want: ErrBadBundle, msg: "git bundle verify",
		},
		{
			name: "a symlink instead of a bundle",
			guest: func(t *testing.T, w *Workspace, repo string) {
				if err := os.Symlink("/etc/passwd", bundlePath(w)); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrBadBundle, msg: "not a regular file",
		},
		{
			name: "a bundle over the size limit",
			guest: func(t *testing.T, w *Workspace, repo string) {
				noise := make([]byte, 8192)
				rand.Read(noise)
				writeFile(t, filepath.Join(repo, "x"), string(noise))
				commit(t, repo, "big")
				guestBundle(t, w, repo)
			},
			limit: func(o *Options) { o.MaxBundleBytes = 1024 },
			want:  ErrBadBundle, msg: "Options.MaxBundleBytes",
		},
		{
			name: "more commits than allowed",
			guest: func(t *testing.T, w *Workspace, repo string) {
				for i := range 3 {
					writeFile(t, filepath.Join(repo, "x"), strings.Repeat("x", i+1))
					commit(t, repo, "c")
				}
				guestBundle(t, w, repo)
			},
			limit: func(o *Options) { o.MaxCommits = 2 },
			want:  ErrBadBundle, msg: "3 commits on the work branch, at most 2",
		},
		{
			name: "a truncated pack",
			guest: func(t *testing.T, w *Workspace, repo string) {
				writeFile(t, filepath.Join(repo, "x"), "x")
				commit(t, repo, "x")
				guestBundle(t, w, repo)
				b, _ := os.ReadFile(bundlePath(w))
				os.WriteFile(bundlePath(w), b[:len(b)-30], 0o644)
			},
			want: ErrBadBundle,
		},
		{
			name: "a partial bundle (v3 filter capability)",
			guest: func(t *testing.T, w *Workspace, repo string) {
				writeFile(t, filepath.Join(repo, "x"), "x")
				commit(t, repo, "x")
				guestBundle(t, w, repo)
				b, _ := os.ReadFile(bundlePath(w))
				b = bytes.Replace(b, []byte("# v2 git bundle\n"), []byte("# v3 git bundle\n@filter=blob:none\n"), 1)
				os.WriteFile(bundlePath(w), b, 0o644)
			},
			want: ErrBadBundle, msg: "capability",
		},
		{
			name: "not a bundle",
			guest: func(t *testing.T, w *Workspace, repo string) {
				writeFile(t, bundlePath(w), "#!/bin/sh\n"+x.cmd()+"\n")
			},
			want: ErrBadBundle, msg: "not a git bundle",
		},
		{
			name: "a commit whose tree holds .git",
			guest: func(t *testing.T, w *Workspace, repo string) {
				evil := blob(t, repo, "#!/bin/sh\n"+x.cmd()+"\n")
				hooks := hostGit(t, repo, []byte("100755 blob "+evil+"\tpost-checkout\n"), "mktree")
				dotgit := hostGit(t, repo, []byte("040000 tree "+hooks+"\thooks\n"), "mktree")
				head := commitTree(t, repo, []string{"040000 tree " + dotgit + "\t.git"}, base, "evil")
				hostGit(t, repo, nil, "update-ref", "refs/heads/"+w.Branch, head)
				guestBundle(t, w, repo)
			},
			want: ErrBadBundle, msg: "hasDotgit",
		},
	}
	// Every case gets its own workspace, so one case's objects cannot help another.
	spaces := make([]*Workspace, len(tests))
	for i, tt := range tests {
		opts := h.options(t, base)
		if tt.limit != nil {
			tt.limit(&opts)
		}
		w, err := Prepare(ctx, opts)
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		t.Cleanup(func() { w.Close() })
		tt.guest(t, w, guestCopy(t, w))
		spaces[i] = w
	}
	x.setEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := spaces[i].Result(ctx)
			x.check(t)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Result: %v", err)
				}
				tt.check(t, r)
				return
			}
			t.Logf("refused: %v", err)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Result = %+v, %v; want %v mentioning %q", r, err, tt.want, tt.msg)
			}
		})
	}
}

func TestReadBundleHeader(t *testing.T) {
	const a, b = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	tests := []struct {
		name, in string
		refs     int
		err      string
	}{
		{"v2", "# v2 git bundle\n-" + a + " base\n" + b + " refs/heads/bumper/1-1\n\nPACK", 1, ""},
		{"v3 sha1", "# v3 git bundle\n@object-format=sha1\n" + b + " refs/heads/x\n\n", 1, ""},
		{"sha256", "# v3 git bundle\n@object-format=sha256\n" + b + " refs/heads/x\n\n", 0, "capability"},
		{"capability in v2", "# v2 git bundle\n@object-format=sha1\n\n", 0, "out of place"},
		{"short oid", "# v2 git bundle\n" + b[:39] + " refs/heads/x\n\n", 0, "ref line"},
		{"HEAD", "# v2 git bundle\n" + b + " HEAD\n\n", 0, "ref line"},
		{"prerequisite after ref", "# v2 git bundle\n" + b + " refs/heads/x\n-" + a + "\n\n", 0, "prerequisite"},
		{"duplicate ref", "# v2 git bundle\n" + b + " refs/heads/x\n" + a + " refs/heads/x\n\n", 0, "duplicate"},
		{"no end", "# v2 git bundle\n" + b + " refs/heads/x\n", 0, "cut short"},
		{"endless", "# v2 git bundle\n" + strings.Repeat("-"+a+"\n", 2000) + "\n", 0, "cut short or longer"},
		{"empty", "", 0, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := readBundleHeader(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !errors.Is(err, ErrBadBundle) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("readBundleHeader = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(h.refs) != tt.refs {
				t.Fatalf("readBundleHeader = %+v, %v", h, err)
			}
		})
	}
}

func TestParseNumstat(t *testing.T) {
	got, err := parseNumstat([]byte("3\t1\ta.go\x00-\t-\timg.png\x000\t5\tdir/with\ttab\x00"))
	want := []evidence.FileStat{{Path: "a.go", Insertions: 3, Deletions: 1}, {Path: "img.png", Binary: true}, {Path: "dir/with\ttab", Deletions: 5}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseNumstat = %+v, %v", got, err)
	}
	for _, bad := range []string{"x\t1\ta\x00", "1\t1\x00", "-1\t0\ta\x00"} {
		if _, err := parseNumstat([]byte(bad)); err == nil {
			t.Errorf("parseNumstat(%q) accepted it", bad)
		}
	}
}
