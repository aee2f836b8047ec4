package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, tt := range []struct {
		data string
		mode os.FileMode
	}{{"first", 0o600}, {"second, longer", 0o644}} {
		if err := WriteFileAtomic(path, []byte(tt.data), tt.mode); err != nil {
			t.Fatalf("WriteFileAtomic: %v", err)
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
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
