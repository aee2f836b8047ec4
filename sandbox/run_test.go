package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  bool
	}{
		{"512", 512, false},
		{"512M", 512, false},
		{"2G", 2048, false},
		{"2GiB", 2048, false},
		{"1.5g", 1536, false},
		{"4096K", 4, false},
		{"0", 0, true},
		{"-1G", 0, true},
		{"lots", 0, true},
		{"", 0, true},
		{"1K", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, []string{"Kernel is empty", "Initrd is empty", "Rootfs is empty"}},
		{"missing files", Config{Kernel: dir + "/k", Initrd: dir + "/i", Rootfs: dir + "/r"}, []string{`Kernel "` + dir + `/k" is not a readable file`}},
		{"bad limits", Config{CPUs: 100, MemoryMB: 64, DiskSizeMB: -1, Timeout: -1}, []string{"CPUs is 100", "MemoryMB is 64", "DiskSizeMB is -1", "invalid Timeout -1ns"}},
		{"bad accel", Config{Accel: "xen"}, []string{`Accel is "xen"`}},
		{"bad workspace", Config{WorkspaceDir: dir + "/nope"}, []string{"WorkspaceDir"}},
		{"network without tap", Config{Network: &Network{}}, []string{"Network.TAP is nil"}},
		{"bad qemu", Config{QEMU: "/nonexistent/qemu"}, []string{"apt-get install qemu-system-x86"}},
		{"qemu as root", Config{QEMUUser: "0"}, []string{"QEMU must run unprivileged"}},
		{"shrinking disk", Config{Rootfs: bigFile(t), DiskSizeMB: 1}, []string{"the disk can only grow; use 0 or at least 3"}},
		{"unknown qemu user", Config{QEMUUser: "no-such-user-bumper"}, []string{"no such user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil {
				t.Fatal("Validate accepted a bad config")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// bigFile returns a sparse 3 MiB file standing in for a root filesystem.
func bigFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rootfs.ext4")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(3 << 20); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRestoreErrorMessage: the library says what to do in its own terms (delete the
// snapshot, or boot cold without Config.SnapshotDir), never with a command's flag; the
// command adds its flag (cmd/bumper).
func TestRestoreErrorMessage(t *testing.T) {
	re := &RestoreError{Snapshot: filepath.Join(t.TempDir(), "gone"), QEMU: "qemu-system-x86_64: Missing section footer"}
	for _, msg := range []string{re.Error(), quarantineSnapshot(re)} { // the snapshot cannot be moved: it is not there
		if strings.Contains(msg, "--") || !strings.Contains(msg, "boot cold") || !strings.Contains(msg, "Config.SnapshotDir") || !strings.Contains(msg, "Missing section footer") {
			t.Errorf("message %q: want the library's own terms (boot cold, Config.SnapshotDir) and QEMU's words, no flag", msg)
		}
	}
}
