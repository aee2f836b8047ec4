package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileAtomic: WriteFileAtomic and ReplaceFile (the same without the sync)
// replace the file whole with the asked mode and leave nothing beside it.
func TestWriteFileAtomic(t *testing.T) {
	for name, write := range map[string]func(string, []byte, os.FileMode) error{"WriteFileAtomic": WriteFileAtomic, "ReplaceFile": ReplaceFile} {
		t.Run(name, func(t *testing.T) { testReplace(t, write) })
	}
}

func testReplace(t *testing.T, write func(string, []byte, os.FileMode) error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, tt := range []struct {
		data string
		mode os.FileMode
	}{{"first", 0o600}, {"second, longer", 0o644}} {
		if err := write(path, []byte(tt.data), tt.mode); err != nil {
			t.Fatalf("write: %v", err)
		}
		b, err := os.ReadFile(path)
		info, serr := os.Stat(path)
		if err != nil || serr != nil || string(b) != tt.data || info.Mode().Perm() != tt.mode {
			t.Fatalf("after writing %q with %v: read %q (%v), mode %v (%v)", tt.data, tt.mode, b, err, info.Mode().Perm(), serr)
		}
	}
	// No temporary file is left beside it.
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v), want only the file", entries, err)
	}
	if err := write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// TestCopyFile: a copy with the asked mode; an existing destination (a link planted
// there, say) is never written through.
func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.WriteFile(src, []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CopyFile(src, dst, 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "content" {
		t.Fatalf("copied %q", b)
	}
	if info, _ := os.Stat(dst); info.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", info.Mode())
	}
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(victim, link)
	if err := CopyFile(src, link, 0o600); err == nil {
		t.Fatal("copied through an existing link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the link's target was written: %q", b)
	}
}
