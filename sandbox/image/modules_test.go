package image

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestResolveModules(t *testing.T) {
	f, err := os.Open("testdata/modules.dep")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	md, err := parseModulesDep(f)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := os.Open("testdata/modules.builtin")
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	builtin, err := parseBuiltin(bf)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		wanted  []string
		want    []string
		wantErr string
	}{
		{name: "leaf", wanted: []string{"crc16"}, want: []string{"crc16"}},
		{name: "virtio mmio", wanted: []string{"virtio_mmio"}, want: []string{"virtio_ring", "virtio", "virtio_mmio"}},
		{name: "shared dependencies once", wanted: []string{"virtio_blk", "virtio_console"},
			want: []string{"virtio_ring", "virtio", "virtio_blk", "virtio_console"}},
		{name: "ext4", wanted: []string{"ext4"}, want: []string{"jbd2", "mbcache", "crc16", "ext4"}},
		{name: "dash in the name", wanted: []string{"virtio-rng"}, want: []string{"virtio_ring", "virtio", "virtio_rng"}},
		{name: "built in is skipped", wanted: []string{"amd_uncore", "crc16"}, want: []string{"crc16"}},
		{name: "the guest set", wanted: GuestModules(), want: []string{
			"virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "failover", "net_failover",
			"virtio_net", "virtio_console", "crc32c_generic", "jbd2", "mbcache", "crc16", "ext4"}},
		{name: "unknown module", wanted: []string{"nosuchmod"}, wantErr: "nosuchmod (needed by the guest) is neither in modules.dep nor built in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := md.resolve(tt.wanted, builtin)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("resolve(%v) = %v, want %v", tt.wanted, got, tt.want)
			}
		})
	}
}

func TestParseModulesDepErrors(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wanted  []string
		wantErr string
	}{
		{name: "no colon", input: "kernel/a.ko kernel/b.ko\n", wantErr: "line 1"},
		{name: "listed twice", input: "kernel/a.ko:\nkernel/x/a.ko:\n", wantErr: "listed twice"},
		{name: "cycle", input: "kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\n", wanted: []string{"a"}, wantErr: "dependency cycle a → b → a"},
		{name: "missing dependency", input: "kernel/a.ko: kernel/gone.ko\n", wanted: []string{"a"}, wantErr: "gone (needed by the guest → a)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, err := parseModulesDep(strings.NewReader(tt.input))
			if err == nil {
				_, err = md.resolve(tt.wanted, nil)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestGenerateModulesDepRejectsNonModuleTrees(t *testing.T) {
	dir := t.TempDir()
	if _, err := generateModulesDep(dir); err == nil || !strings.Contains(err.Error(), "no .ko files") {
		t.Fatalf("error = %v, want one saying there are no .ko files", err)
	}
	if err := os.WriteFile(dir+"/bad.ko", []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generateModulesDep(dir); err == nil || !strings.Contains(err.Error(), "as ELF") {
		t.Fatalf("error = %v, want one saying the module is not ELF", err)
	}
}
