package gitserver

import (
	"context"
	"errors"
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
