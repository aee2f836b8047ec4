package image

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

// fakeBzImage builds the smallest file with a bzImage setup header whose payload fields
// point at payload.
func fakeBzImage(payload []byte, protocol uint16) []byte {
	const setupSects = 1
	start := (setupSects + 1) * 512
	b := make([]byte, start+16+len(payload)+32)
	b[bzSetupSectsOffset] = setupSects
	copy(b[bzHeaderMagicOffset:], "HdrS")
	binary.LittleEndian.PutUint16(b[bzVersionOffset:], protocol)
	binary.LittleEndian.PutUint32(b[bzPayloadOffset:], 16)
	binary.LittleEndian.PutUint32(b[bzPayloadLenOffset:], uint32(len(payload)))
	copy(b[start+16:], payload)
	return b
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func withSize(data []byte, size uint32) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte(nil), data...), size)
}

func TestExtractVmlinuxCrafted(t *testing.T) {
	kernel := append([]byte("\x7fELF"), bytes.Repeat([]byte("kernel text "), 1000)...)
	outOfRange := fakeBzImage([]byte("xx"), 0x020f)
	binary.LittleEndian.PutUint32(outOfRange[bzPayloadLenOffset:], 1<<30)
	type extractCase struct {
		name    string
		input   []byte
		want    []byte
		wantErr string
	}
	tests := []extractCase{
		{name: "gzip payload", input: fakeBzImage(gzipped(t, kernel), 0x020f), want: kernel},
		{name: "not a bzImage", input: bytes.Repeat([]byte{0}, 4096), wantErr: "not an x86 bzImage"},
		{name: "too short", input: []byte("MZ"), wantErr: "not an x86 bzImage"},
		{name: "no payload", input: fakeBzImage(nil, 0x020f), wantErr: "no compressed payload"},
		{name: "old boot protocol", input: fakeBzImage(gzipped(t, kernel), 0x0206), wantErr: "predates payload fields"},
		{name: "payload outside the file", input: outOfRange, wantErr: "outside the"},
		{name: "unknown compression", input: fakeBzImage([]byte("plain text, no magic"), 0x020f), wantErr: "no compression format this builder knows"},
		{name: "gzip payload that is not ELF", input: fakeBzImage(gzipped(t, []byte("hello")), 0x020f), wantErr: "not an ELF file"},
		{name: "corrupt gzip", input: fakeBzImage(append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{0xff}, 64)...), 0x020f), wantErr: "gzip"},
	}
	if xz, err := exec.LookPath("xz"); err == nil {
		cmd := exec.Command(xz, "-c", "--check=crc32")
		cmd.Stdin = bytes.NewReader(kernel)
		packed, err := cmd.Output()
		if err != nil {
			t.Fatalf("xz: %v", err)
		}
		tests = append(tests,
			extractCase{name: "xz payload with appended size", input: fakeBzImage(withSize(packed, uint32(len(kernel))), 0x020f), want: kernel},
			extractCase{name: "xz payload with wrong appended size", input: fakeBzImage(withSize(packed, 12), 0x020f), wantErr: "the kernel records 12"},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractVmlinux(context.Background(), tt.input)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("extracted %d bytes, want the %d-byte kernel", len(got), len(tt.want))
			}
		})
	}
}

// TestDebianKernel runs the pure parts on the real Debian kernel package: vmlinux
// extraction and the modules.dep generation and resolution.
func TestDebianKernel(t *testing.T) {
	testgate.Slow(t, "the Debian kernel package from the mirror")
	testgate.Command(t, "apt-get", "apt")
	testgate.Command(t, "apt-cache", "apt")
	testgate.Command(t, "dpkg-deb", "dpkg")
	ctx := context.Background()
	pkg, err := resolveKernelPackage(ctx, DefaultKernelPackage)
	if err != nil {
		t.Fatal(err)
	}
	if !concreteKernelPkg.MatchString(pkg.Name) {
		t.Fatalf("linux-image-amd64 resolved to %q, want a linux-image-<abi>-amd64 package", pkg.Name)
	}
	work := t.TempDir()
	dest := work + "/root"
	if err := downloadAndUnpack(ctx, pkg, work, dest); err != nil {
		t.Fatal(err)
	}
	release := strings.TrimPrefix(pkg.Name, "linux-image-")
	modRoot := dest + "/lib/modules/" + release

	t.Run("vmlinux is an x86-64 ELF executable", func(t *testing.T) {
		bz, err := os.ReadFile(dest + "/boot/vmlinuz-" + release)
		if err != nil {
			t.Fatal(err)
		}
		vmlinux, err := ExtractVmlinux(ctx, bz)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(vmlinux, elfMagic) {
			t.Fatalf("vmlinux starts with % x, want the ELF magic", vmlinux[:4])
		}
		f, err := elf.NewFile(bytes.NewReader(vmlinux))
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
			t.Errorf("vmlinux is %v %v, want EM_X86_64 ET_EXEC", f.Machine, f.Type)
		}
		if len(vmlinux) <= len(bz) {
			t.Errorf("vmlinux (%d bytes) is not larger than the compressed vmlinuz (%d bytes)", len(vmlinux), len(bz))
		}
	})

	// The mirror serves whichever kernel Debian ships today, so the builder's own
	// modules.dep is checked against depmod's for that same kernel, not against a
	// fixture recorded from another one (their module dependencies differ: 6.1.0-48's
	// virtio no longer needs virtio_ring).
	t.Run("generated modules.dep agrees with depmod", func(t *testing.T) {
		testgate.Command(t, "depmod", "kmod")
		dep, err := generateModulesDep(modRoot)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, "depmod", "-n", "-b", dest, release).Output()
		if err != nil {
			t.Fatalf("depmod: %v", err)
		}
		// -n prints modules.dep first, then the other files, each opened by a comment.
		if i := bytes.Index(out, []byte("\n#")); i >= 0 {
			out = out[:i+1]
		}
		want, err := parseModulesDep(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		md, err := parseModulesDep(bytes.NewReader(dep))
		if err != nil {
			t.Fatal(err)
		}
		if len(md.path) != len(want.path) {
			t.Errorf("generated %d modules, depmod %d", len(md.path), len(want.path))
		}
		// The builder writes each module's direct dependencies, depmod all of them:
		// compare depmod's with the closure of the builder's, as sets.
		var closure func(name string, seen map[string]bool)
		closure = func(name string, seen map[string]bool) {
			for _, d := range md.deps[name] {
				if !seen[d] {
					seen[d] = true
					closure(d, seen)
				}
			}
		}
		for name, p := range want.path {
			if md.path[name] != p {
				t.Errorf("module %s: path %q, depmod %q", name, md.path[name], p)
			}
			seen := map[string]bool{}
			closure(name, seen)
			var got []string
			for d := range seen {
				got = append(got, d)
			}
			if strings.Join(sorted(got), ",") != strings.Join(sorted(want.deps[name]), ",") {
				t.Errorf("module %s: deps %v, depmod %v", name, sorted(got), sorted(want.deps[name]))
			}
		}
	})

	t.Run("guest modules resolve", func(t *testing.T) {
		names, paths, err := resolveGuestModules(modRoot)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != len(paths) {
			t.Fatalf("%d names but %d paths", len(names), len(paths))
		}
		pos := map[string]int{}
		for i, n := range names {
			pos[n] = i
		}
		for _, before := range [][2]string{{"virtio_ring", "virtio_mmio"}, {"virtio", "virtio_mmio"}, {"jbd2", "ext4"}, {"mbcache", "ext4"}, {"crc16", "ext4"}, {"virtio", "virtio_blk"}} {
			a, aok := pos[before[0]]
			b, bok := pos[before[1]]
			if !aok || !bok || a > b {
				t.Errorf("load order %v: want %s before %s", names, before[0], before[1])
			}
		}
		// Whatever this kernel's dependencies are, each module loads after its own.
		dep, err := generateModulesDep(modRoot)
		if err != nil {
			t.Fatal(err)
		}
		md, err := parseModulesDep(bytes.NewReader(dep))
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			for _, d := range md.deps[n] {
				if p, ok := pos[d]; !ok || p > i {
					t.Errorf("load order %v: %s needs %s first", names, n, d)
				}
			}
		}
		for _, w := range GuestModules() {
			if _, ok := pos[w]; !ok {
				t.Errorf("load order %v lacks %s", names, w)
			}
		}
	})
}
