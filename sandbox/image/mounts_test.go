package image

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bumperdev/bumper/internal/testgate"
)

// TestRemoveTreeSparesBindMounts recreates what a killed debootstrap leaves: the host's
// directories bind-mounted and a proc mounted inside the target. removeTree must detach
// them and never delete through them.
func TestRemoveTreeSparesBindMounts(t *testing.T) {
	testgate.RequiresRoot(t)
	base := t.TempDir()
	host := filepath.Join(base, "host-dev")
	tree := filepath.Join(base, "work", "tree")
	precious := filepath.Join(host, "precious")
	for _, d := range []string{host, filepath.Join(tree, "dev"), filepath.Join(tree, "proc"), filepath.Join(tree, "dir with space")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(precious, []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts := []struct{ src, dst, fstype string }{
		{host, filepath.Join(tree, "dev"), ""},
		{host, filepath.Join(tree, "dir with space"), ""},
		{"proc", filepath.Join(tree, "proc"), "proc"},
	}
	for _, m := range mounts {
		flags := uintptr(0)
		if m.fstype == "" {
			flags = unix.MS_BIND
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, flags, ""); err != nil {
			t.Fatalf("mount %s: %v", m.dst, err)
		}
		dst := m.dst
		t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	}

	if err := removeTree(filepath.Join(base, "work")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "work")); !os.IsNotExist(err) {
		t.Errorf("work directory still there: %v", err)
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "host file" {
		t.Errorf("the bind-mounted host file was harmed: %q, %v", b, err)
	}
	left, err := mountsUnder(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("mounts left under the work directory: %v", left)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	tests := []struct{ in, want string }{
		{`/plain/path`, "/plain/path"},
		{`/dir\040with\040space`, "/dir with space"},
		{`/tab\011here`, "/tab\there"},
		{`/back\134slash`, `/back\slash`},
		{`/trailing\04`, `/trailing\04`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := unescapeMountinfo(tt.in); got != tt.want {
				t.Errorf("unescapeMountinfo(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
