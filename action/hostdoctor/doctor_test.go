package hostdoctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/preflight"
	"github.com/bumperdev/bumper/internal/doctorreport"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/netns"
	"github.com/bumperdev/bumper/sandbox/slots"
)

// machine fakes a runner host: good unless told otherwise.
type machine struct {
	euid   int
	kvm    bool
	noQEMU bool
	free   uint64
}

func (m machine) probes(cache string) preflight.Probes {
	return preflight.Probes{
		Euid:     func() int { return m.euid },
		Network:  func() netns.ProbeResult { return netns.ProbeResult{} },
		LookPath: func(p string) (string, error) { return "/usr/bin/" + p, nil },
		QEMUVersion: func(context.Context, string) (string, error) {
			if m.noQEMU {
				return "", errors.New("qemu-system-x86_64 not found")
			}
			return "QEMU emulator version 7.2.15", nil
		},
		LookupUser: func(string) error { return nil },
		KnownAccel: func(sandbox.Config) (sandbox.AccelChoice, bool) {
			if m.kvm {
				return sandbox.AccelChoice{Accel: sandbox.AccelKVM, Reason: "KVM canary booted"}, true
			}
			return sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: "KVM canary did not boot"}, true
		},
		ChooseAccel: func(context.Context, sandbox.Config) sandbox.AccelChoice { return sandbox.AccelChoice{} },
		LoadImage:   func(dir string) (preflight.ImageInfo, error) { return preflight.ImageInfo{}, errors.New("no image") },
		CachedImage: func(string) (preflight.ImageInfo, bool) {
			return preflight.ImageInfo{Digest: "sha256:cached", Kernel: "/k"}, true
		},
		BuildHost: func() error { return nil },
		Writable:  func(string) error { return nil },
		FreeBytes: func(dir string) (uint64, string, error) { return m.free, dir, nil },
	}
}

func status(fs []doctorreport.Finding, check string) doctorreport.Status {
	for _, f := range fs {
		if f.Check == check {
			return f.Status
		}
	}
	return "absent"
}

// TestHost maps the preflight's checks to findings: a failed check blocks, a warning
// warns, and the cache's size is measured.
func TestHost(t *testing.T) {
	cache := t.TempDir()
	if err := os.WriteFile(filepath.Join(cache, "image.raw"), make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		m        machine
		allowTCG bool
		want     map[string]doctorreport.Status
	}{
		{"good", machine{kvm: true, free: 50 << 30}, false, map[string]doctorreport.Status{"host.root": doctorreport.OK, "host.accelerator": doctorreport.OK, "host.qemu": doctorreport.OK, "host.disk_cache": doctorreport.OK}},
		{"not root", machine{euid: 1000, kvm: true, free: 50 << 30}, false, map[string]doctorreport.Status{"host.root": doctorreport.Blocking}},
		{"no KVM", machine{free: 50 << 30}, false, map[string]doctorreport.Status{"host.accelerator": doctorreport.Blocking}},
		{"no KVM, TCG allowed", machine{free: 50 << 30}, true, map[string]doctorreport.Status{"host.accelerator": doctorreport.OK}},
		{"no QEMU", machine{kvm: true, noQEMU: true, free: 50 << 30}, false, map[string]doctorreport.Status{"host.qemu": doctorreport.Blocking}},
		{"little disk", machine{kvm: true, free: 2 << 30}, false, map[string]doctorreport.Status{"host.disk_cache": doctorreport.Warning, "host.disk_runner_temp": doctorreport.Warning}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Host(context.Background(), preflight.Options{Accel: sandbox.AccelAuto, AllowTCG: c.allowTCG, Cache: cache,
				RunnerTemp: t.TempDir(), QEMUUser: "nobody", Probes: c.m.probes(cache)})
			for check, st := range c.want {
				if s := status(got, check); s != st {
					t.Errorf("%s is %s, want %s: %+v", check, s, st, got)
				}
			}
			for _, f := range got {
				if f.Status != doctorreport.OK && f.Fix == "" {
					t.Errorf("%s says what is wrong but not how to fix it: %s", f.Check, f.Detail)
				}
			}
			size := got[len(got)-1]
			if size.Check != "host.cache_size" || !strings.Contains(size.Detail, "0.00 GiB") {
				t.Errorf("cache size: %+v", size)
			}
		})
	}
}

// TestHostForReal runs the real probes where the machine has root and QEMU: the report
// has every check, and the KVM canary (or its cached result) decided the accelerator.
func TestHostForReal(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	got := Host(context.Background(), preflight.Options{Accel: sandbox.AccelAuto, AllowTCG: true, Cache: t.TempDir(), RunnerTemp: t.TempDir(), QEMUUser: "nobody"})
	for _, c := range []string{"host.root", "host.network_namespaces", "host.nftables", "host.qemu", "host.accelerator", "host.cache_size"} {
		if s := status(got, c); s != doctorreport.OK {
			t.Errorf("%s: %s on a machine with root and QEMU: %+v", c, s, got)
		}
	}
}

// TestVMSlots: the finding says the host's limits and what its VMs hold; a bad variable
// blocks, naming it.
func TestVMSlots(t *testing.T) {
	m := slots.Machine{CPUs: 2, MemTotalMB: 8192}
	dir := filepath.Join(t.TempDir(), "slots")
	env := map[string]string{slots.EnvDir: dir}
	get := func(k string) string { return env[k] }

	f := vmSlots(get, m, nil)
	if f.Check != "host.vm_slots" || f.Status != doctorreport.OK || !strings.Contains(f.Detail, "at most 2 VMs with 6144 MiB") || !strings.Contains(f.Detail, "does not exist yet") {
		t.Fatalf("no slots yet: %+v", f)
	}
	h, err := slots.New(slots.Limits{MaxVMs: 2, MemoryMB: 6144, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Acquire(context.Background(), 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if f := vmSlots(get, m, nil); f.Status != doctorreport.OK || !strings.Contains(f.Detail, "now 1 of 2 VMs (1024 of 6144 MiB) in use, 0 runs waiting") {
		t.Fatalf("one VM: %+v", f)
	}
	env[slots.EnvMaxVMs] = "many"
	if f := vmSlots(get, m, nil); f.Status != doctorreport.Blocking || !strings.Contains(f.Detail, slots.EnvMaxVMs) || f.Fix == "" {
		t.Fatalf("a bad variable: %+v", f)
	}
}
