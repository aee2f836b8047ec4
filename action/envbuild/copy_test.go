package envbuild

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestCopyTreeOnlyTracked: given the checkout's tracked files, the setup's workspace
// gets those and nothing else: not the .env an admin keeps untracked, not .git.
func TestCopyTreeOnlyTracked(t *testing.T) {
	src := t.TempDir()
	for name, content := range map[string]string{
		"go.mod": "module x\n", "scripts/setup.sh": "echo\n", ".env": "TOKEN=secret\n",
		"build/cache.bin": "x", ".git/config": "[core]\n", "scripts/notes.txt": "mine\n",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		only []string
		want []string
	}{
		{"tracked files only", []string{"go.mod", "scripts/setup.sh"}, []string{"go.mod", "scripts/setup.sh"}},
		{"the whole tree but .git", nil, []string{".env", "build/cache.bin", "go.mod", "scripts/notes.txt", "scripts/setup.sh"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "repo")
			if err := copyTree(src, dst, tt.only); err != nil {
				t.Fatal(err)
			}
			var got []string
			_ = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(dst, p)
					got = append(got, filepath.ToSlash(rel))
				}
				return nil
			})
			sort.Strings(got)
			if len(got) != len(tt.want) {
				t.Fatalf("copied %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("copied %q, want %q", got, tt.want)
				}
			}
		})
	}
}
