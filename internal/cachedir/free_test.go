package cachedir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

func TestEnsureFree(t *testing.T) {
	dir := t.TempDir()
	free, err := FreeBytes(dir)
	if err != nil || free == 0 {
		t.Fatalf("FreeBytes: %d, %v", free, err)
	}
	if err := EnsureFree(dir, 1, "a test"); err != nil {
		t.Fatalf("1 byte: %v", err)
	}
	err = EnsureFree(dir, free+1<<40, "building an image")
	if err == nil || !strings.Contains(err.Error(), "building an image needs") || !strings.Contains(err.Error(), "bumper image prune") {
		t.Fatalf("more than there is: %v", err)
	}
	if _, err := FreeBytes(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("FreeBytes of a missing directory: no error")
	}
}

// TestEnsureFreeOnAFullTmpfs: a small file system, filled, refuses a build and says how
// much it has; emptied, it passes again.
func TestEnsureFreeOnAFullTmpfs(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.Command(t, "mount", "util-linux")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	if err := EnsureFree(dir, 4<<20, "a build"); err != nil {
		t.Fatalf("an empty 8 MiB tmpfs: %v", err)
	}
	fill := filepath.Join(dir, "fill")
	if err := os.WriteFile(fill, make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsureFree(dir, 4<<20, "a build"); err == nil || !strings.Contains(err.Error(), "which has 2.0 MiB") {
		t.Fatalf("a full tmpfs: %v", err)
	}
	os.Remove(fill)
	if err := EnsureFree(dir, 4<<20, "a build"); err != nil {
		t.Fatalf("emptied again: %v", err)
	}
}
