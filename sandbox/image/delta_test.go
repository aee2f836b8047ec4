package image

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reseal makes the image in dir consistent again after an attacker changed its files:
// the root disk's hash and size in the manifest, the manifest's digest, the directory's
// name (returned). It is what someone who can write the images directory can do, since
// images carry no signature.
func reseal(t *testing.T, dir string, edit func(*Manifest)) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&m)
	}
	if sum, size, err := hashFile(filepath.Join(dir, m.Rootfs.file())); err == nil {
		m.Rootfs.SHA256 = sum
		if m.Rootfs.Format == FormatQcow2 {
			m.Rootfs.FileBytes = size
		}
	}
	if m.Digest, err = m.computeDigest(); err != nil {
		t.Fatal(err)
	}
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, verifiedFile))
	moved := filepath.Join(filepath.Dir(dir), digestHex(m.Digest))
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	return moved
}

// TestLoadDeltaAttacks: someone who can write the images directory (manifests and files
// alike, rehashed so every digest matches) must not make QEMU read a host file through a
// derived image's backing chain. Each attack is refused by Load, so FindDerived passes
// the image over and no VM boots it; the untouched image loads.
func TestLoadDeltaAttacks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	rebase := func(backing, format string) func(*testing.T, string, string) string {
		return func(t *testing.T, dir, _ string) string {
			qemuImg(t, "rebase", "-q", "-u", "-f", "qcow2", "-b", backing, "-F", format, filepath.Join(dir, DeltaFile))
			return reseal(t, dir, nil)
		}
	}
	tests := []struct {
		name    string
		attack  func(t *testing.T, dir, parentDir string) string // returns the image's directory
		wantErr string
	}{
		{"untouched", func(_ *testing.T, dir, _ string) string { return dir }, ""},
		{"a backing file by absolute path", rebase(secret, "raw"), "backing file is"},
		{"a relative backing file climbing out", rebase("../../../../../../../../"+secret, "raw"), "backing file is"},
		{"a backing file through the parent and out", func(t *testing.T, dir, parentDir string) string {
			return rebase("../"+filepath.Base(parentDir)+"/../../../../../../../.."+secret, "raw")(t, dir, parentDir)
		}, "backing file is"},
		{"the parent's root disk read as qcow2", func(t *testing.T, dir, parentDir string) string {
			// A raw disk a guest wrote could hold a qcow2 header naming any host file.
			return rebase("../"+filepath.Base(parentDir)+"/"+RootfsFile, "qcow2")(t, dir, parentDir)
		}, "backing file is"},
		{"no backing format (QEMU would probe it)", func(t *testing.T, dir, _ string) string {
			// qemu-img no longer writes such a header: end the extensions before the
			// backing format's.
			p := filepath.Join(dir, DeltaFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			at := binary.BigEndian.Uint32(b[100:])
			if binary.BigEndian.Uint32(b[at:]) != qcow2ExtBackFmt {
				t.Fatalf("no backing format extension at %d", at)
			}
			writeAt(t, p, int64(at), make([]byte, 4))
			return reseal(t, dir, nil)
		}, "backing file is"},
		{"an external data file", func(t *testing.T, dir, parentDir string) string {
			p := filepath.Join(dir, DeltaFile)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			qemuImg(t, "create", "-q", "-u", "-f", "qcow2", "-b", "../"+filepath.Base(parentDir)+"/"+RootfsFile, "-F", "raw",
				"-o", "data_file="+filepath.Join(t.TempDir(), "data"), p, "8192")
			return reseal(t, dir, nil)
		}, "incompatible features"},
		{"a parent digest naming another directory", func(t *testing.T, dir, _ string) string {
			return reseal(t, dir, func(m *Manifest) { m.Parent = "sha256:" + strings.Repeat("e", 64) })
		}, "parent image is gone"},
		{"the parent's directory a link elsewhere", func(t *testing.T, dir, parentDir string) string {
			copyDir := filepath.Join(t.TempDir(), filepath.Base(parentDir))
			qemuImgCopyDir(t, parentDir, copyDir)
			if err := os.RemoveAll(parentDir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(copyDir, parentDir); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "symbolic link"},
		{"the parent's root disk a link to a host file of the same content", func(t *testing.T, dir, parentDir string) string {
			rootfs := filepath.Join(parentDir, RootfsFile)
			if err := os.Remove(rootfs); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret, rootfs); err != nil {
				t.Fatal(err)
			}
			_ = os.Remove(filepath.Join(parentDir, verifiedFile))
			return dir
		}, "not a regular file"},
		{"the delta a link", func(t *testing.T, dir, _ string) string {
			p := filepath.Join(dir, DeltaFile)
			elsewhere := filepath.Join(t.TempDir(), DeltaFile)
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "not a regular file"},
		{"a delta declared raw", func(t *testing.T, dir, _ string) string {
			return reseal(t, dir, func(m *Manifest) { m.Rootfs.Format = FormatRaw })
		}, "schema 3 is a qcow2 delta"},
		{"a delta declared a full copy (schema 2)", func(t *testing.T, dir, _ string) string {
			return reseal(t, dir, func(m *Manifest) { m.Schema = DerivedSchemaVersion })
		}, "schema 3 is a qcow2 delta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			images := filepath.Join(t.TempDir(), "images")
			baseDir, _ := writeFakeImage(t, images)
			base, err := Load(baseDir)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Derive(base, writeDelta(t, base, "setup"), Derivation{Key: testKey("1")})
			if err != nil {
				t.Fatal(err)
			}
			dir := tt.attack(t, d.Dir(), baseDir)
			_, err = Load(dir)
			_, found := FindDerived(images, testKey("1"))
			if tt.wantErr == "" {
				if err != nil || !found {
					t.Fatalf("Load = %v, FindDerived found %v; want the image", err, found)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load = %v, want an error with %q", err, tt.wantErr)
			}
			if found {
				t.Error("FindDerived returned the attacked image")
			}
		})
	}
}

// qemuImgCopyDir copies an image directory's regular files.
func qemuImgCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadQcow2: the header parser accepts what qemu-img writes and refuses the rest.
func TestReadQcow2(t *testing.T) {
	dir := t.TempDir()
	backing := filepath.Join(dir, "base.raw")
	if err := os.WriteFile(backing, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string // qemu-img create options before the file; nil: write raw bytes
		raw     []byte
		want    Qcow2Info
		wantErr string
	}{
		{name: "a delta", args: []string{"-b", backing, "-F", "raw"}, want: Qcow2Info{VirtualSize: 1 << 20, Backing: backing, BackingFormat: "raw"}},
		{name: "compat 0.10 (version 2)", args: []string{"-b", backing, "-F", "raw", "-o", "compat=0.10"}, want: Qcow2Info{VirtualSize: 1 << 20, Backing: backing, BackingFormat: "raw"}},
		{name: "no backing", args: []string{}, want: Qcow2Info{VirtualSize: 1 << 20}},
		{name: "encrypted", args: []string{"--object", "secret,id=s0,data=x", "-o", "encrypt.format=luks,encrypt.key-secret=s0,encrypt.iter-time=10"}, wantErr: "encrypted"},
		{name: "extended L2", args: []string{"-o", "extended_l2=on"}, wantErr: "incompatible features"},
		{name: "zstd compression", args: []string{"-o", "compression_type=zstd"}, wantErr: "incompatible features"},
		{name: "raw bytes", raw: []byte(strings.Repeat("ext4", 100)), wantErr: "no qcow2 magic"},
		{name: "a truncated header", raw: []byte("QFI\xfb\x00\x00\x00\x03"), wantErr: "no qcow2 magic"},
		{name: "empty", raw: []byte{}, wantErr: "no qcow2 magic"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "d"+string(rune('a'+i))+".qcow2")
			if tt.args == nil {
				if err := os.WriteFile(p, tt.raw, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				qemuImg(t, append(append([]string{"create", "-q", "-f", "qcow2"}, tt.args...), p, "1M")...)
			}
			got, err := ReadQcow2(p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadQcow2 = %+v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReadQcow2 = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestReadQcow2HostileHeaders: headers no qemu-img writes, as someone who can write a
// file in the images directory would craft them to get past the checks Load makes
// before it hashes the delta: each is refused, and none makes the parser panic.
func TestReadQcow2HostileHeaders(t *testing.T) {
	be := binary.BigEndian
	// header is a version 3 header of a 1 MiB disk with no extensions, the backing name
	// off bytes at off.
	header := func(off uint64, n uint32) []byte {
		b := make([]byte, 4096)
		be.PutUint32(b[0:], qcow2Magic)
		be.PutUint32(b[4:], 3)
		be.PutUint64(b[8:], off)
		be.PutUint32(b[16:], n)
		be.PutUint32(b[20:], 16)
		be.PutUint64(b[24:], 1<<20)
		be.PutUint32(b[100:], 104)
		copy(b[512:], "../parent/rootfs.img")
		return b
	}
	for _, tt := range []struct {
		name string
		b    []byte
	}{
		{"a backing name offset that wraps past 2^64 into the header", header(1<<64-4, 20)},
		{"a backing name offset past the header", header(1<<40, 20)},
		{"a backing name of 0 bytes at an offset", header(512, 0)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "rootfs.qcow2")
			if err := os.WriteFile(p, tt.b, 0o644); err != nil {
				t.Fatal(err)
			}
			var got Qcow2Info
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("ReadQcow2 panicked: %v", r)
					}
				}()
				got, err = ReadQcow2(p)
			}()
			if err == nil || !strings.Contains(err.Error(), "backing file name") {
				t.Fatalf("ReadQcow2 = %+v, %v; want the backing file name refused", got, err)
			}
		})
	}
}
