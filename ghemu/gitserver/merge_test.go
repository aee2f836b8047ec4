package gitserver

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	main := f.ref(t, "refs/heads/main")
	commit := func(branch, parent, file, content string) string {
		t.Helper()
		sha, err := f.srv.CommitFiles(ctx, "acme", "widgets", branch, parent, map[string][]byte{file: []byte(content)}, "edit "+file, testAuthor)
		if err != nil {
			t.Fatalf("CommitFiles: %v", err)
		}
		return sha
	}
	if err := f.srv.UpdateRef(ctx, "acme", "widgets", "refs/heads/feature", main, ""); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.UpdateRef(ctx, "acme", "widgets", "refs/heads/clash", main, ""); err != nil {
		t.Fatal(err)
	}
	feature := commit("feature", main, "feature.txt", "f\n")
	main2 := commit("main", main, "README.md", "# widgets, edited on main\n")
	clash := commit("clash", main, "README.md", "# widgets, edited on clash\n")

	merged, err := f.srv.Merge(ctx, "acme", "widgets", "main", feature, "Merge feature", testAuthor)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	c, err := f.srv.Commit(ctx, "acme", "widgets", merged)
	if err != nil || len(c.Parents) != 2 || c.Parents[0] != main2 || c.Parents[1] != feature {
		t.Fatalf("merge commit %+v (%v), want parents %s %s", c, err, main2, feature)
	}
	if got := f.ref(t, "refs/heads/main"); got != merged {
		t.Fatalf("main at %s, want the merge %s", got, merged)
	}
	for file, want := range map[string]string{"feature.txt": "f\n", "README.md": "# widgets, edited on main\n"} {
		if b, _, err := f.srv.ReadFile(ctx, "acme", "widgets", "main", file); err != nil || string(b) != want {
			t.Errorf("%s after merge = %q (%v), want %q", file, b, err, want)
		}
	}

	if _, err := f.srv.Merge(ctx, "acme", "widgets", "main", clash, "Merge clash", testAuthor); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting Merge: %v, want ErrConflict", err)
	}
	if got := f.ref(t, "refs/heads/main"); got != merged {
		t.Fatalf("conflicting merge moved main to %s", got)
	}
	if _, err := f.srv.Merge(ctx, "acme", "widgets", "nope", feature, "m", testAuthor); !errors.Is(err, ErrRefNotFound) {
		t.Fatalf("Merge into a missing branch: %v, want ErrRefNotFound", err)
	}
}

// TestCheckMerge: a pull request's mergeability from a real merge of its two commits,
// nothing moved: clean and current, behind (the base has more), conflicting, and
// unrelated histories refused.
func TestCheckMerge(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	main := f.ref(t, "refs/heads/main")
	branch := func(name, file, content string) string {
		t.Helper()
		if err := f.srv.UpdateRef(ctx, "acme", "widgets", "refs/heads/"+name, main, ""); err != nil {
			t.Fatal(err)
		}
		sha, err := f.srv.CommitFiles(ctx, "acme", "widgets", name, main, map[string][]byte{file: []byte(content)}, "edit "+file, testAuthor)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	feature := branch("feature", "feature.txt", "f\n")
	clash := branch("clash", "README.md", "# widgets, edited on clash\n")
	orphan, err := f.srv.CommitFiles(ctx, "acme", "widgets", "orphan", "", map[string][]byte{"x": []byte("x\n")}, "root", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	main2, err := f.srv.CommitFiles(ctx, "acme", "widgets", "main", main, map[string][]byte{"README.md": []byte("# widgets, edited on main\n")}, "edit on main", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		base, head string
		want       Mergeability
		err        error
	}{
		{"current and clean", main, feature, Mergeability{}, nil},
		{"behind, clean", main2, feature, Mergeability{Behind: true}, nil},
		{"behind, conflicting", main2, clash, Mergeability{Behind: true, Conflict: true}, nil},
		{"unrelated histories", main2, orphan, Mergeability{}, ErrNoMergeBase},
		{"no such commit", main2, "0123456789012345678901234567890123456789", Mergeability{}, ErrObjectNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.srv.CheckMerge(ctx, "acme", "widgets", tt.base, tt.head)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Errorf("CheckMerge = %+v, %v; want %+v, %v", got, err, tt.want, tt.err)
			}
		})
	}
	if f.ref(t, "refs/heads/main") != main2 || f.ref(t, "refs/heads/clash") != clash {
		t.Error("CheckMerge moved a branch")
	}
}

// TestMergeInto: a branch update's merge (the base into the head) is made only on the
// tip expected, with its own committer; a moved tip or a conflict leaves it alone.
func TestMergeInto(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	main := f.ref(t, "refs/heads/main")
	if err := f.srv.UpdateRef(ctx, "acme", "widgets", "refs/heads/topic", main, ""); err != nil {
		t.Fatal(err)
	}
	topic, err := f.srv.CommitFiles(ctx, "acme", "widgets", "topic", main, map[string][]byte{"t.txt": []byte("t\n")}, "topic", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	main2, err := f.srv.CommitFiles(ctx, "acme", "widgets", "main", main, map[string][]byte{"m.txt": []byte("m\n")}, "main", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	web := Signature{Name: "GitHub", Email: "noreply@example.test", When: testAuthor.When}
	tests := []struct {
		name   string
		expect string
		err    error
	}{
		{"a tip that moved", main, ErrRefMismatch},
		{"the tip expected", topic, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := f.srv.MergeInto(ctx, "acme", "widgets", MergeSpec{Branch: "topic", Expect: tt.expect, Head: main2,
				Message: "Merge branch 'main' into topic", Author: testAuthor, Committer: web, Sign: WebFlowSignature})
			sha := m.SHA
			if !errors.Is(err, tt.err) {
				t.Fatalf("MergeInto = %v, want %v", err, tt.err)
			}
			if err != nil {
				if f.ref(t, "refs/heads/topic") != topic {
					t.Error("a refused merge moved the branch")
				}
				return
			}
			c, err := f.srv.Commit(ctx, "acme", "widgets", sha)
			if err != nil || len(c.Parents) != 2 || c.Parents[0] != topic || c.Parents[1] != main2 ||
				c.Author.Name != testAuthor.Name || c.Committer.Name != "GitHub" || f.ref(t, "refs/heads/topic") != sha {
				t.Errorf("merge commit %+v, %v", c, err)
			}
			// GitHub signs the merges its web flow makes: the signature is over the
			// commit as it stands without it.
			if m.Signature != WebFlowSignature(m.Payload) || !strings.HasPrefix(m.Payload, "tree ") || !strings.Contains(m.Payload, "parent "+topic+"\nparent "+main2+"\n") {
				t.Errorf("the merge's payload %q and signature %q", m.Payload, m.Signature)
			}
		})
	}
}

// TestPushedCommits: what a push webhook lists of a ref's move: the commits it brought,
// oldest first and at most the newest limit, whether each is new to the repository,
// and the files each changed.
func TestPushedCommits(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	main := f.ref(t, "refs/heads/main")
	if err := f.srv.UpdateRef(ctx, "acme", "widgets", "refs/heads/topic", main, ""); err != nil {
		t.Fatal(err)
	}
	one, err := f.srv.CommitFiles(ctx, "acme", "widgets", "topic", main, map[string][]byte{"a.txt": []byte("a\n")}, "one\n", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	two, err := f.srv.CommitFiles(ctx, "acme", "widgets", "topic", one, map[string][]byte{"a.txt": []byte("b\n"), "README.md": nil}, "two", testAuthor)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		before, after string
		limit         int
		want          []string // SHAs, oldest first
		distinct      []bool
	}{
		{"an update", main, two, 20, []string{one, two}, []bool{true, true}},
		{"the newest of a limit", main, two, 1, []string{two}, []bool{true}},
		{"a new branch: what no other ref reaches", "", two, 20, []string{one, two}, []bool{true, true}},
		{"a deletion", main, "", 20, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, head, err := f.srv.PushedCommits(ctx, "acme", "widgets", "refs/heads/topic", tt.before, tt.after, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) || (tt.after == "") != (head == nil) {
				t.Fatalf("commits %d (head %v), want %d", len(got), head, len(tt.want))
			}
			for i, c := range got {
				if c.SHA != tt.want[i] || c.Distinct != tt.distinct[i] {
					t.Errorf("commit %d = %s distinct %v, want %s %v", i, c.SHA, c.Distinct, tt.want[i], tt.distinct[i])
				}
			}
		})
	}
	got, _, err := f.srv.PushedCommits(ctx, "acme", "widgets", "refs/heads/topic", one, two, 20)
	if err != nil || len(got) != 1 || len(got[0].Modified) != 1 || got[0].Modified[0] != "a.txt" ||
		len(got[0].Removed) != 1 || got[0].Removed[0] != "README.md" || len(got[0].Added) != 0 {
		t.Fatalf("files of the second commit = %+v, %v", got, err)
	}
	// main's own commit is reached by main: not distinct on a branch made from it.
	_, head, err := f.srv.PushedCommits(ctx, "acme", "widgets", "refs/heads/copy", "", main, 20)
	if err != nil || head == nil || head.Distinct {
		t.Fatalf("a branch at main's commit: head %+v, %v; want not distinct", head, err)
	}
}
