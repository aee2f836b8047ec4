package gitserver

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "no Authorize", opts: Options{Root: t.TempDir()}, wantErr: "Authorize is required"},
		{name: "no Root", opts: Options{Authorize: testAuthorize}, wantErr: "Root is required"},
		{name: "root under a file", opts: Options{Root: "/dev/null/x", Authorize: testAuthorize}, wantErr: "failed to create repository root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCreateRepositoryReadFileCommit(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	files := map[string][]byte{
		".github/bumper.yml": []byte("version: 1\n"),
		"src/main.go":        []byte("package main\n"),
	}
	sha, err := f.srv.CreateRepository(ctx, "acme", "tools", "trunk", files, testAuthor)
	if err != nil {
		t.Fatalf("CreateRepository: %v", err)
	}
	if branch, err := f.srv.DefaultBranch(ctx, "acme", "tools"); err != nil || branch != "trunk" {
		t.Fatalf("DefaultBranch = %q (%v), want trunk", branch, err)
	}
	refs, err := f.srv.Refs(ctx, "acme", "tools")
	if err != nil || len(refs) != 1 || refs["refs/heads/trunk"] != sha {
		t.Fatalf("Refs = %v (%v), want only trunk at %s", refs, err, sha)
	}

	content, blob, err := f.srv.ReadFile(ctx, "acme", "tools", "trunk", ".github/bumper.yml")
	if err != nil || string(content) != "version: 1\n" {
		t.Fatalf("ReadFile = %q (%v)", content, err)
	}
	want, err := exec.Command("sh", "-c", "printf 'version: 1\\n' | git hash-object --stdin").Output()
	if err != nil {
		t.Fatal(err)
	}
	if blob != strings.TrimSpace(string(want)) {
		t.Errorf("blob %s, want %s", blob, want)
	}

	c, err := f.srv.Commit(ctx, "acme", "tools", sha)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if c.SHA != sha || len(c.Tree) != 40 || len(c.Parents) != 0 || c.Message != "Initial commit" ||
		c.Author.Name != testAuthor.Name || c.Author.Email != testAuthor.Email || !c.Author.When.Equal(testAuthor.When) ||
		c.Committer != c.Author {
		t.Errorf("Commit = %+v", c)
	}

	next, err := f.srv.CommitFiles(ctx, "acme", "tools", "trunk", sha,
		map[string][]byte{"src/main.go": nil, "docs/a.md": []byte("a")}, "move things\n\nbody", testAuthor)
	if err != nil {
		t.Fatalf("CommitFiles: %v", err)
	}
	c2, err := f.srv.Commit(ctx, "acme", "tools", "refs/heads/trunk")
	if err != nil || c2.SHA != next || len(c2.Parents) != 1 || c2.Parents[0] != sha || c2.Message != "move things\n\nbody" {
		t.Fatalf("Commit after CommitFiles = %+v (%v)", c2, err)
	}

	tests := []struct {
		name, rev, path string
		want            string
		wantErr         error
	}{
		{name: "kept file", rev: "trunk", path: ".github/bumper.yml", want: "version: 1\n"},
		{name: "added file", rev: next, path: "docs/a.md", want: "a"},
		{name: "deleted file", rev: "trunk", path: "src/main.go", wantErr: ErrFileNotFound},
		{name: "file in the old commit", rev: sha, path: "src/main.go", want: "package main\n"},
		{name: "directory", rev: "trunk", path: ".github", wantErr: ErrNotAFile},
		{name: "under a file", rev: "trunk", path: "docs/a.md/x", wantErr: ErrFileNotFound},
		{name: "glob is literal", rev: "trunk", path: "docs/*", wantErr: ErrFileNotFound},
		{name: "missing branch", rev: "nope", path: "docs/a.md", wantErr: ErrObjectNotFound},
		{name: "missing commit", rev: strings.Repeat("1", 40), path: "docs/a.md", wantErr: ErrObjectNotFound},
		{name: "dot-dot path", rev: "trunk", path: "../etc/passwd", wantErr: ErrInvalidName},
		{name: "absolute path", rev: "trunk", path: "/docs/a.md", wantErr: ErrInvalidName},
		{name: "option-like rev", rev: "--output=/tmp/x", path: "docs/a.md", wantErr: ErrInvalidName},
		{name: "rev with ..", rev: "trunk..main", path: "docs/a.md", wantErr: ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := f.srv.ReadFile(ctx, "acme", "tools", tt.rev, tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ReadFile error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("ReadFile = %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

func TestCreateRepositoryErrors(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	files := map[string][]byte{"a": []byte("a")}
	tests := []struct {
		name, owner, repo, branch string
		files                     map[string][]byte
		author                    Signature
		wantErr                   error
	}{
		{name: "taken", owner: "acme", repo: "widgets", branch: "main", wantErr: ErrRepositoryExists},
		{name: "dot-dot repo", owner: "acme", repo: "..", branch: "main", wantErr: ErrInvalidName},
		{name: "slash in repo", owner: "acme", repo: "a/b", branch: "main", wantErr: ErrInvalidName},
		{name: "repo ending .git", owner: "acme", repo: "x.git", branch: "main", wantErr: ErrInvalidName},
		{name: "empty repo", owner: "acme", repo: "", branch: "main", wantErr: ErrInvalidName},
		{name: "dot-dot owner", owner: "..", repo: "x", branch: "main", wantErr: ErrInvalidName},
		{name: "owner with hyphen at end", owner: "acme-", repo: "x", branch: "main", wantErr: ErrInvalidName},
		{name: "bad branch", owner: "acme", repo: "x", branch: "a..b", wantErr: ErrInvalidName},
		{name: "author without email", owner: "acme", repo: "x", branch: "main", files: files, author: Signature{Name: "n"}, wantErr: ErrInvalidName},
		{name: "author with angle bracket", owner: "acme", repo: "x", branch: "main", files: files, author: Signature{Name: "n<", Email: "e"}, wantErr: ErrInvalidName},
		{name: "file path with .git", owner: "acme", repo: "x", branch: "main", files: map[string][]byte{".git/config": nil}, author: testAuthor, wantErr: ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.srv.CreateRepository(ctx, tt.owner, tt.repo, tt.branch, tt.files, tt.author)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CreateRepository error %v, want %v", err, tt.wantErr)
			}
		})
	}
	// A failed create leaves nothing behind, so the name stays free.
	if _, err := f.srv.CreateRepository(ctx, "acme", "x", "main", files, testAuthor); err != nil {
		t.Fatalf("CreateRepository after failed attempts: %v", err)
	}
	// An empty repository has no commit and no refs.
	sha, err := f.srv.CreateRepository(ctx, "acme", "empty", "main", nil, Signature{})
	if err != nil || sha != "" {
		t.Fatalf("empty CreateRepository = %q (%v)", sha, err)
	}
	if refs, err := f.srv.Refs(ctx, "acme", "empty"); err != nil || len(refs) != 0 {
		t.Fatalf("Refs of an empty repository = %v (%v)", refs, err)
	}
	if _, err := f.srv.Refs(ctx, "acme", "missing"); !errors.Is(err, ErrRepositoryNotFound) {
		t.Fatalf("Refs of a missing repository: %v", err)
	}
}

func TestUpdateRef(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	main := f.ref(t, "refs/heads/main")
	next, err := f.srv.CommitFiles(ctx, "acme", "widgets", "main", main, map[string][]byte{"n": []byte("n")}, "next", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	unrelated, err := f.srv.CommitFiles(ctx, "acme", "widgets", "orphan", "", map[string][]byte{"o": []byte("o")}, "orphan", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	missing := strings.Repeat("1", 40)

	// Steps run in order on the same repository; each states the ref it leaves.
	steps := []struct {
		name, ref, newSHA, oldSHA string
		wantErr                   error
		wantAt                    string
	}{
		{name: "create", ref: "refs/bumper/dispatch/1-r-1", newSHA: main, wantAt: main},
		{name: "create again is refused", ref: "refs/bumper/dispatch/1-r-1", newSHA: next, wantErr: ErrRefExists, wantAt: main},
		{name: "swap from the wrong old", ref: "refs/bumper/dispatch/1-r-1", newSHA: next, oldSHA: next, wantErr: ErrRefMismatch, wantAt: main},
		{name: "swap from the right old", ref: "refs/bumper/dispatch/1-r-1", newSHA: next, oldSHA: main, wantAt: next},
		{name: "swap a missing ref", ref: "refs/heads/none", newSHA: next, oldSHA: main, wantErr: ErrRefNotFound},
		{name: "missing object", ref: "refs/heads/m", newSHA: missing, wantErr: ErrObjectNotFound},
		{name: "bad ref name", ref: "refs/heads/a..b", newSHA: main, wantErr: ErrInvalidName},
		{name: "ref outside refs/", ref: "HEAD", newSHA: main, wantErr: ErrInvalidName},
		{name: "short object name", ref: "refs/heads/s", newSHA: "abc", wantErr: ErrInvalidName},
		{name: "directory/file conflict", ref: "refs/heads/main/sub", newSHA: main, wantErr: ErrRefConflict},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := f.srv.UpdateRef(ctx, "acme", "widgets", st.ref, st.newSHA, st.oldSHA)
			if !errors.Is(err, st.wantErr) {
				t.Fatalf("UpdateRef error %v, want %v", err, st.wantErr)
			}
			if got := f.ref(t, st.ref); got != st.wantAt {
				t.Fatalf("%s at %q, want %q", st.ref, got, st.wantAt)
			}
		})
	}

	moves := []struct {
		name, newSHA string
		force        bool
		wantErr      error
		wantAt       string
	}{
		{name: "fast forward", newSHA: next, wantAt: next},
		{name: "backwards without force", newSHA: main, wantErr: ErrNotFastForward, wantAt: next},
		{name: "unrelated without force", newSHA: unrelated, wantErr: ErrNotFastForward, wantAt: next},
		{name: "backwards with force", newSHA: main, force: true, wantAt: main},
		{name: "missing object", newSHA: missing, force: true, wantErr: ErrObjectNotFound, wantAt: main},
	}
	for _, mv := range moves {
		t.Run("move/"+mv.name, func(t *testing.T) {
			err := f.srv.MoveRef(ctx, "acme", "widgets", "refs/heads/main", mv.newSHA, mv.force)
			if !errors.Is(err, mv.wantErr) {
				t.Fatalf("MoveRef error %v, want %v", err, mv.wantErr)
			}
			if got := f.ref(t, "refs/heads/main"); got != mv.wantAt {
				t.Fatalf("main at %s, want %s", got, mv.wantAt)
			}
		})
	}

	t.Run("delete", func(t *testing.T) {
		if err := f.srv.DeleteRef(ctx, "acme", "widgets", "refs/bumper/dispatch/1-r-1"); err != nil {
			t.Fatalf("DeleteRef: %v", err)
		}
		if err := f.srv.DeleteRef(ctx, "acme", "widgets", "refs/bumper/dispatch/1-r-1"); !errors.Is(err, ErrRefNotFound) {
			t.Fatalf("second DeleteRef: %v, want ErrRefNotFound", err)
		}
	})

	t.Run("ancestry", func(t *testing.T) {
		if ok, err := f.srv.IsAncestor(ctx, "acme", "widgets", main, next); err != nil || !ok {
			t.Errorf("IsAncestor(main, next) = %v, %v", ok, err)
		}
		if ok, err := f.srv.IsAncestor(ctx, "acme", "widgets", next, main); err != nil || ok {
			t.Errorf("IsAncestor(next, main) = %v, %v", ok, err)
		}
		if base, err := f.srv.MergeBase(ctx, "acme", "widgets", next, "main"); err != nil || base != main {
			t.Errorf("MergeBase = %s, %v; want %s", base, err, main)
		}
		if _, err := f.srv.MergeBase(ctx, "acme", "widgets", next, "orphan"); !errors.Is(err, ErrNoMergeBase) {
			t.Errorf("MergeBase of unrelated histories: %v", err)
		}
	})
}

func TestCommitFilesCompareAndSwap(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	main := f.ref(t, "refs/heads/main")

	if _, err := f.srv.CommitFiles(ctx, "acme", "widgets", "main", "", nil, "root", testAuthor); !errors.Is(err, ErrRefExists) {
		t.Errorf("root commit on an existing branch: %v", err)
	}
	if _, err := f.srv.CommitFiles(ctx, "acme", "widgets", "main", main, nil, "  ", testAuthor); !errors.Is(err, ErrInvalidName) {
		t.Errorf("empty message: %v", err)
	}
	if _, err := f.srv.CommitFiles(ctx, "acme", "widgets", "nope", main, nil, "m", testAuthor); !errors.Is(err, ErrRefNotFound) {
		t.Errorf("commit on a missing branch: %v", err)
	}

	// Writers racing from the same parent: exactly one wins, the others are told.
	const writers = 6
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.srv.CommitFiles(ctx, "acme", "widgets", "main", main,
				map[string][]byte{"w.txt": {byte('a' + i)}}, "writer", Signature{Name: "w", Email: "w@example.com", When: time.Now()})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrRefMismatch):
			t.Errorf("losing writer got %v, want ErrRefMismatch", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers won, want exactly 1", won)
	}
}
