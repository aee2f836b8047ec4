package gitserver

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkClone measures a full clone of a small repository by the real git client,
// through Authorize and git http-backend.
func BenchmarkClone(b *testing.B) {
	f := newFixture(b, Options{})
	url := f.url(readToken, "acme", "widgets")
	tmp := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := f.git("", "clone", "--quiet", url, filepath.Join(tmp, strconv.Itoa(i))); err != nil {
			b.Fatalf("clone: %v\n%s", err, out)
		}
	}
}

// BenchmarkCommitFiles measures one commit of one file without a work tree.
func BenchmarkCommitFiles(b *testing.B) {
	f := newFixture(b, Options{})
	ctx := context.Background()
	refs, err := f.srv.Refs(ctx, "acme", "widgets")
	if err != nil {
		b.Fatal(err)
	}
	parent := refs["refs/heads/main"]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		parent, err = f.srv.CommitFiles(ctx, "acme", "widgets", "main", parent,
			map[string][]byte{"n.txt": []byte(strconv.Itoa(i))}, "bench", testAuthor)
		if err != nil {
			b.Fatal(err)
		}
	}
}
