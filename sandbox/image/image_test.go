package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleManifest() Manifest {
	return Manifest{
		Schema:   SchemaVersion,
		Created:  time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC),
		Kernel:   Kernel{Package: "linux-image-6.1.0-57-amd64", Version: "6.1.192-3", Release: "6.1.0-57-amd64", SHA256: strings.Repeat("a", 64)},
		Initrd:   Initrd{SHA256: strings.Repeat("b", 64), Modules: []string{"virtio_ring", "virtio"}, Busybox: "1:1.35.0-4"},
		Rootfs:   Rootfs{SHA256: strings.Repeat("c", 64), SizeBytes: 1 << 20, Format: "raw"},
		Agent:    Agent{Path: AgentPath, SHA256: strings.Repeat("d", 64)},
		Packages: []Package{{Name: "ca-certificates", Version: "20230311"}, {Name: "git", Version: "1:2.39.5-0+deb12u2"}},
		Suite:    "bookworm",
		Mirror:   "http://deb.debian.org/debian",
		Cmdline:  BaseCmdline,
	}
}

func TestManifestDigest(t *testing.T) {
	base, err := sampleManifest().computeDigest()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		change   func(m *Manifest)
		wantSame bool
	}{
		{name: "same inputs", change: func(m *Manifest) {}, wantSame: true},
		{name: "created time is not content", change: func(m *Manifest) { m.Created = time.Now() }, wantSame: true},
		{name: "digest field is not content", change: func(m *Manifest) { m.Digest = "sha256:00" }, wantSame: true},
		{name: "package added", change: func(m *Manifest) { m.Packages = append(m.Packages, Package{Name: "nodejs", Version: "18.19.0"}) }},
		{name: "package version", change: func(m *Manifest) { m.Packages[1].Version = "1:2.39.2-1.1" }},
		{name: "agent changed", change: func(m *Manifest) { m.Agent.SHA256 = strings.Repeat("e", 64) }},
		{name: "kernel changed", change: func(m *Manifest) { m.Kernel.Version = "6.1.193-1" }},
		{name: "rootfs changed", change: func(m *Manifest) { m.Rootfs.SHA256 = strings.Repeat("f", 64) }},
		{name: "cmdline changed", change: func(m *Manifest) { m.Cmdline += " quiet" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleManifest()
			tt.change(&m)
			got, err := m.computeDigest()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, "sha256:") || len(got) != len("sha256:")+64 {
				t.Fatalf("digest %q is not sha256:<64 hex>", got)
			}
			if (got == base) != tt.wantSame {
				t.Errorf("digest %s vs base %s: same = %v, want %v", got, base, got == base, tt.wantSame)
			}
		})
	}
}

func TestInputKey(t *testing.T) {
	base := inputs{Recipe: [3]int{1, 1, 1}, Suite: "bookworm", Mirror: "http://m", Packages: []string{"ca-certificates", "git"},
		Kernel: debPackage{"linux-image-6.1.0-57-amd64", "6.1.192-3"}, Busybox: debPackage{"busybox-static", "1"}, Agent: "aa", Headroom: 1}
	changed := base
	changed.Packages = []string{"ca-certificates", "git", "nodejs"}
	newAgent := base
	newAgent.Agent = "bb"
	same := base
	same.Packages = append([]string(nil), base.Packages...)
	if base.key() != same.key() {
		t.Error("the same inputs gave two keys")
	}
	if base.key() == changed.key() {
		t.Error("a changed package list kept the key")
	}
	if base.key() == newAgent.key() {
		t.Error("a changed agent kept the key")
	}
}

// writeFakeImage writes a small but complete image directory under outDir.
func writeFakeImage(t *testing.T, outDir string) (string, Manifest) {
	t.Helper()
	files := map[string][]byte{KernelFile: []byte("\x7fELF kernel"), InitrdFile: []byte("070701 initrd"), RootfsFile: make([]byte, 8192)}
	stage := t.TempDir()
	m := sampleManifest()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(stage, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		switch name {
		case KernelFile:
			m.Kernel.SHA256 = hex.EncodeToString(sum[:])
		case InitrdFile:
			m.Initrd.SHA256 = hex.EncodeToString(sum[:])
		case RootfsFile:
			m.Rootfs.SHA256, m.Rootfs.SizeBytes = hex.EncodeToString(sum[:]), int64(len(data))
		}
	}
	var err error
	if m.Digest, err = m.computeDigest(); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(outDir, digestHex(m.Digest))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stage, dir); err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string) string
		wantErr string
	}{
		{name: "intact", damage: func(t *testing.T, dir string) string { return dir }},
		{name: "changed rootfs", wantErr: "rootfs.ext4 has SHA-256", damage: func(t *testing.T, dir string) string {
			writeAt(t, filepath.Join(dir, RootfsFile), 100, []byte("x"))
			return dir
		}},
		{name: "changed kernel", wantErr: "vmlinux has SHA-256", damage: func(t *testing.T, dir string) string {
			writeAt(t, filepath.Join(dir, KernelFile), 0, []byte("Z"))
			return dir
		}},
		{name: "missing initrd", wantErr: "initrd.img", damage: func(t *testing.T, dir string) string {
			if err := os.Remove(filepath.Join(dir, InitrdFile)); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{name: "no manifest", wantErr: "bumper image build", damage: func(t *testing.T, dir string) string {
			if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{name: "edited manifest", wantErr: "does not match its content", damage: func(t *testing.T, dir string) string {
			editManifest(t, dir, func(m map[string]any) { m["suite"] = "trixie" })
			return dir
		}},
		{name: "unknown manifest field", wantErr: "unknown field", damage: func(t *testing.T, dir string) string {
			editManifest(t, dir, func(m map[string]any) { m["extra"] = 1 })
			return dir
		}},
		{name: "other schema", wantErr: "schema 4, this bumper reads 1 to 3", damage: func(t *testing.T, dir string) string {
			editManifest(t, dir, func(m map[string]any) { m["schema"] = 4 })
			return dir
		}},
		{name: "derived schema without a derivation", wantErr: "needs a parent digest and a derivation key", damage: func(t *testing.T, dir string) string {
			editManifest(t, dir, func(m map[string]any) { m["schema"] = DerivedSchemaVersion })
			return dir
		}},
		{name: "base schema with a parent", wantErr: "only schema 2 has", damage: func(t *testing.T, dir string) string {
			editManifest(t, dir, func(m map[string]any) { m["parent"] = "sha256:" + strings.Repeat("a", 64) })
			return dir
		}},
		{name: "renamed directory", wantErr: "does not match the digest", damage: func(t *testing.T, dir string) string {
			moved := filepath.Join(filepath.Dir(dir), strings.Repeat("0", 64))
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			return moved
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, m := writeFakeImage(t, filepath.Join(t.TempDir(), "images"))
			dir = tt.damage(t, dir)
			im, err := Load(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if im.Manifest().Digest != m.Digest || im.Dir() != dir {
				t.Errorf("loaded %s from %s, want %s from %s", im.Manifest().Digest, im.Dir(), m.Digest, dir)
			}
			for _, p := range []string{im.KernelPath(), im.InitrdPath(), im.RootfsPath()} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("path %s: %v", p, err)
				}
			}
		})
	}
}

func writeAt(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}

func editManifest(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, ManifestFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHashFileSparse(t *testing.T) {
	tests := []struct {
		name   string
		size   int64
		writes map[int64]string
	}{
		{name: "all hole", size: 3 << 20},
		{name: "data in the middle", size: 5 << 20, writes: map[int64]string{2 << 20: "middle"}},
		{name: "data at both ends", size: 4<<20 + 17, writes: map[int64]string{0: "start", 4<<20 + 10: "end"}},
		{name: "dense small file", size: 10, writes: map[int64]string{0: "0123456789"}},
		{name: "empty", size: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(tt.size); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, tt.size)
			for off, s := range tt.writes {
				if _, err := f.WriteAt([]byte(s), off); err != nil {
					t.Fatal(err)
				}
				copy(want[off:], s)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			got, size, err := hashFile(p)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(want)
			if got != hex.EncodeToString(sum[:]) || size != tt.size {
				t.Errorf("hashFile = %s, %d; want %x, %d", got, size, sum, tt.size)
			}
		})
	}
}

// TestLoadAfterVerification checks that the verification record only ever skips work:
// a file changed after a successful Load, even with its modification time restored, is
// still caught.
func TestLoadAfterVerification(t *testing.T) {
	dir, _ := writeFakeImage(t, filepath.Join(t.TempDir(), "images"))
	if _, err := Load(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, verifiedFile)); err != nil {
		t.Fatalf("no verification record after a full Load: %v", err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("second Load: %v", err)
	}
	rootfs := filepath.Join(dir, RootfsFile)
	st, err := os.Stat(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	writeAt(t, rootfs, 100, []byte("x"))
	if err := os.Chtimes(rootfs, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "rootfs.ext4 has SHA-256") {
		t.Fatalf("Load after a change with the old mtime = %v, want a hash mismatch", err)
	}
}

// TestLoadAfterKernelLinked: another image linking the shared kernel (its change time
// moves) makes the next Load hash the kernel again, not the root filesystem; and a
// kernel whose content changed is still caught.
func TestLoadAfterKernelLinked(t *testing.T) {
	dir, _ := writeFakeImage(t, filepath.Join(t.TempDir(), "images"))
	im, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, KernelFile), filepath.Join(t.TempDir(), "another-image-vmlinux")); err != nil {
		t.Fatal(err)
	}
	fresh := verifiedFiles(dir, im.Manifest().Digest, RootfsFile)
	if fresh[KernelFile] || !fresh[RootfsFile] || !fresh[InitrdFile] {
		t.Fatalf("after the kernel was linked elsewhere, still verified: %v; want the rootfs and initrd only", fresh)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("Load after the kernel was linked: %v", err)
	}
	kernel := filepath.Join(dir, KernelFile)
	st, _ := os.Stat(kernel)
	writeAt(t, kernel, 10, []byte("x"))
	_ = os.Chtimes(kernel, st.ModTime(), st.ModTime())
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), KernelFile+" has SHA-256") {
		t.Fatalf("Load after the kernel changed = %v, want a hash mismatch", err)
	}
}
