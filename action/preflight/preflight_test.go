package preflight

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/ghaction"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/netns"
)

const (
	testKernel = "/var/cache/bumper/images/abc/vmlinux"
	hungReason = "KVM canary did not finish booting within 5s (nested KVM hangs)"
)

var errPerm = errors.New("operation not permitted")

// machine is a fake runner; each test changes what it needs.
type machine struct {
	euid        int
	network     netns.ProbeResult
	missing     map[string]bool // programs not on PATH
	noQEMU      bool
	noUser      bool
	known       *sandbox.AccelChoice // KnownAccel's answer; nil: only a canary can tell
	canary      sandbox.AccelChoice
	image       error // LoadImage's error
	cached      bool  // an image is in the cache
	noBuild     error
	unwritable  bool
	free        map[string]uint64
	canaryBoots []string // kernels the canary booted
}

func healthy() *machine {
	return &machine{canary: sandbox.AccelChoice{Accel: sandbox.AccelKVM, Reason: "KVM canary booted"},
		cached: true, free: map[string]uint64{"/var/cache/bumper": 50 << 30, "/runner/_temp": 20 << 30}}
}

func (m *machine) probes(t *testing.T) Probes {
	return Probes{
		Euid:    func() int { return m.euid },
		Network: func() netns.ProbeResult { return m.network },
		LookPath: func(p string) (string, error) {
			if m.missing[p] {
				return "", errors.New("not found")
			}
			return "/usr/bin/" + p, nil
		},
		QEMUVersion: func(_ context.Context, q string) (string, error) {
			if m.noQEMU {
				return "", errors.New(q + " not found")
			}
			return "/usr/bin/" + q + ": QEMU emulator version 7.2.15 (Debian 1:7.2+dfsg-7+deb12u13)", nil
		},
		LookupUser: func(u string) error {
			if m.noUser {
				return errors.New("user " + u + " does not exist here")
			}
			return nil
		},
		KnownAccel: func(cfg sandbox.Config) (sandbox.AccelChoice, bool) {
			if cfg.Accel != sandbox.AccelAuto {
				t.Errorf("the accelerator was probed with accel %q: only auto runs the canary", cfg.Accel)
			}
			if m.known != nil {
				return *m.known, true
			}
			return sandbox.AccelChoice{}, false
		},
		ChooseAccel: func(_ context.Context, cfg sandbox.Config) sandbox.AccelChoice {
			if cfg.Kernel == "" {
				t.Error("the canary was asked to boot no kernel: it would report a broken KVM")
			}
			m.canaryBoots = append(m.canaryBoots, cfg.Kernel)
			return m.canary
		},
		LoadImage: func(dir string) (ImageInfo, error) {
			if m.image != nil {
				return ImageInfo{}, m.image
			}
			return ImageInfo{Dir: dir, Digest: "sha256:abc", Kernel: testKernel, About: "kernel 6.1.0-57-amd64, Debian bookworm"}, nil
		},
		CachedImage: func(string) (ImageInfo, bool) {
			return ImageInfo{Digest: "sha256:cached", Kernel: testKernel}, m.cached
		},
		BuildHost: func() error { return m.noBuild },
		Writable: func(string) error {
			if m.unwritable {
				return errPerm
			}
			return nil
		},
		FreeBytes: func(dir string) (uint64, string, error) {
			f, ok := m.free[dir]
			if !ok {
				return 0, dir, errors.New("no such file or directory")
			}
			return f, dir, nil
		},
	}
}

func opts() Options {
	return Options{Accel: sandbox.AccelAuto, Cache: "/var/cache/bumper", RunnerTemp: "/runner/_temp", QEMUUser: "nobody"}
}

func TestRun(t *testing.T) {
	tcg := &sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: "/dev/kvm unusable: open /dev/kvm: no such file or directory"}
	kvmCached := &sandbox.AccelChoice{Accel: sandbox.AccelKVM, Reason: "KVM canary booted (cached)"}
	tests := []struct {
		name    string
		machine func(*machine)
		opts    func(*Options)
		// want maps checks to their status; checks not named must be ok.
		want map[string]Status
		// says are what the failures and warnings must say (Check.String), by check.
		says map[string]string
		// accel is Report.Accel.Accel.
		accel string
	}{
		{name: "healthy KVM runner", accel: sandbox.AccelKVM},
		{name: "KVM known from the canary's cache", machine: func(m *machine) { m.known = kvmCached }, accel: sandbox.AccelKVM},
		{name: "not root",
			machine: func(m *machine) {
				m.euid = 1001
				m.network = netns.ProbeResult{Namespace: errPerm, TAP: errPerm, Firewall: errPerm}
			},
			want: map[string]Status{CheckRoot: Failed, CheckNetns: Failed, CheckNftables: Failed},
			says: map[string]string{
				CheckRoot:     "root: running as uid 1001, not root: each run's network namespace, TAP device and nftables rules need root; run the self-hosted runner as root",
				CheckNetns:    "operation not permitted; run as root (see the root check)",
				CheckNftables: "not tried: no network namespace to try it in",
			},
			accel: sandbox.AccelKVM},
		{name: "no nftables",
			machine: func(m *machine) {
				m.network.Firewall = errors.New("failed to install the run's nftables table (is nf_tables available?): protocol not supported")
			},
			want:  map[string]Status{CheckNftables: Failed},
			says:  map[string]string{CheckNftables: "is nf_tables available?): protocol not supported; apt-get install nftables"},
			accel: sandbox.AccelKVM},
		{name: "no TAP",
			machine: func(m *machine) { m.network.TAP = errors.New("failed to create the TAP device: no such device") },
			want:    map[string]Status{CheckNetns: Failed},
			says:    map[string]string{CheckNetns: "a network namespace works, but failed to create the TAP device: no such device; load the tun module"},
			accel:   sandbox.AccelKVM},
		{name: "no QEMU, no git, no qemu-img",
			machine: func(m *machine) { m.noQEMU, m.missing = true, map[string]bool{"git": true, "qemu-img": true} },
			want:    map[string]Status{CheckQEMU: Failed, CheckTools: Failed},
			says: map[string]string{CheckQEMU: "qemu-system-x86_64 not found; apt-get install qemu-system-x86",
				CheckTools: "missing qemu-img (the run's copy-on-write disk), git (the workspace, fetched on the host); apt-get install qemu-utils git"},
			accel: sandbox.AccelKVM},
		{name: "no QEMU user",
			machine: func(m *machine) { m.noUser = true },
			opts:    func(o *Options) { o.QEMUUser = "bumper-vm" },
			want:    map[string]Status{CheckQEMUUser: Failed},
			says:    map[string]string{CheckQEMUUser: "user bumper-vm does not exist here; create it (useradd --system"},
			accel:   sandbox.AccelKVM},
		{name: "KVM broken, TCG not allowed",
			machine: func(m *machine) { m.canary = sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: hungReason} },
			want:    map[string]Status{CheckAccel: Failed},
			says: map[string]string{CheckAccel: "accelerator: KVM does not work here (" + hungReason + "); set allow-tcg: true to run under TCG, " +
				"about 5× slower to boot and up to 20× slower for CPU-bound work"}},
		{name: "KVM broken, TCG allowed",
			machine: func(m *machine) { m.canary = sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: hungReason} },
			opts:    func(o *Options) { o.AllowTCG = true },
			accel:   sandbox.AccelTCG},
		{name: "no /dev/kvm, TCG not allowed",
			machine: func(m *machine) { m.known = tcg },
			want:    map[string]Status{CheckAccel: Failed},
			says:    map[string]string{CheckAccel: "KVM does not work here (/dev/kvm unusable: open /dev/kvm: no such file or directory); set allow-tcg: true"}},
		{name: "accel kvm forced, KVM broken",
			machine: func(m *machine) { m.canary = sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: hungReason} },
			opts:    func(o *Options) { o.Accel, o.AllowTCG = sandbox.AccelKVM, true },
			want:    map[string]Status{CheckAccel: Failed},
			says:    map[string]string{CheckAccel: "accel is kvm, but KVM does not work here (" + hungReason + "); fix KVM on this runner, or set accel: auto and allow-tcg: true"}},
		{name: "accel kvm forced, KVM works", opts: func(o *Options) { o.Accel = sandbox.AccelKVM }, accel: sandbox.AccelKVM},
		{name: "accel tcg without allow-tcg",
			opts: func(o *Options) { o.Accel = sandbox.AccelTCG },
			want: map[string]Status{CheckAccel: Failed},
			says: map[string]string{CheckAccel: "accel is tcg, which runs the VM under software emulation, about 5× slower to boot and up to 20× slower for CPU-bound work such as git, compilers and tests; set allow-tcg: true to accept that"}},
		{name: "accel tcg allowed", opts: func(o *Options) { o.Accel, o.AllowTCG = sandbox.AccelTCG, true }, accel: sandbox.AccelTCG},
		{name: "no image yet: the canary cannot boot, TCG not allowed",
			machine: func(m *machine) { m.cached = false },
			want:    map[string]Status{CheckAccel: Warning},
			says: map[string]string{
				CheckImage: "no image in /var/cache/bumper yet: the run builds the default image first, about a minute the first time",
				CheckAccel: "only the KVM canary can tell whether guests run under it (some nested hosts hang), and it boots the image's kernel, which is not built yet; the run checks again once its image exists"}},
		{name: "no image yet, TCG allowed", machine: func(m *machine) { m.cached = false }, opts: func(o *Options) { o.AllowTCG = true }},
		{name: "image given and valid",
			opts: func(o *Options) { o.Image = "/srv/images/abc" },
			says: map[string]string{CheckImage: "sha256:abc loads and verifies (kernel 6.1.0-57-amd64, Debian bookworm)"}, accel: sandbox.AccelKVM},
		{name: "image given, broken",
			machine: func(m *machine) {
				m.image = errors.New("failed to load image /srv/images/abc: rootfs.ext4 has SHA-256 1, the manifest says 2; the file was changed, rebuild the image")
			},
			opts: func(o *Options) { o.Image = "/srv/images/abc" },
			want: map[string]Status{CheckImage: Failed, CheckAccel: Warning},
			says: map[string]string{CheckImage: "the file was changed, rebuild the image; pass an image directory that `sudo bumper image build` printed",
				CheckAccel: "and the image does not load (see the image check)"}},
		{name: "image given, cache read-only",
			machine: func(m *machine) { m.unwritable = true },
			opts:    func(o *Options) { o.Image = "/srv/images/abc" },
			want:    map[string]Status{CheckImage: Warning},
			says:    map[string]string{CheckImage: "the cache /var/cache/bumper is not writable (operation not permitted): warm-start snapshots cannot be kept"},
			accel:   sandbox.AccelKVM},
		{name: "no image, cache read-only",
			machine: func(m *machine) { m.unwritable, m.cached = true, false },
			want:    map[string]Status{CheckImage: Failed, CheckAccel: Warning},
			says:    map[string]string{CheckImage: "the default image cannot be built: the cache /var/cache/bumper is not writable: operation not permitted; set cache to a writable directory"}},
		{name: "no image, no debootstrap",
			machine: func(m *machine) {
				m.cached, m.noBuild = false, errors.New("failed to build the image: debootstrap is not installed; run apt-get install debootstrap")
			},
			want: map[string]Status{CheckImage: Failed, CheckAccel: Warning},
			says: map[string]string{CheckImage: "none cached in /var/cache/bumper, and the default image cannot be built here: failed to build the image: debootstrap is not installed"}},
		{name: "images cached, no debootstrap",
			machine: func(m *machine) {
				m.noBuild = errors.New("failed to build the image: debootstrap is not installed; run apt-get install debootstrap")
			},
			want:  map[string]Status{CheckImage: Warning},
			says:  map[string]string{CheckImage: "images are cached in /var/cache/bumper (newest sha256:cached), but no new one can be built here"},
			accel: sandbox.AccelKVM},
		{name: "low disk",
			machine: func(m *machine) { m.free["/var/cache/bumper"], m.free["/runner/_temp"] = 3<<30, 512<<20 },
			want:    map[string]Status{CheckDiskCache: Warning, CheckDiskTemp: Failed},
			says: map[string]string{CheckDiskCache: "disk: cache: 3.0 GiB free in /var/cache/bumper; below 5.0 GiB a run may fill the disk",
				CheckDiskTemp: "disk: runner temp: 0.5 GiB free in /runner/_temp; free at least 1.0 GiB there"},
			accel: sandbox.AccelKVM},
		{name: "disk unknown",
			machine: func(m *machine) { delete(m.free, "/runner/_temp") },
			want:    map[string]Status{CheckDiskTemp: Failed},
			says:    map[string]string{CheckDiskTemp: "cannot tell the free space of /runner/_temp"},
			accel:   sandbox.AccelKVM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := healthy()
			if tt.machine != nil {
				tt.machine(m)
			}
			o := opts()
			if tt.opts != nil {
				tt.opts(&o)
			}
			o.Probes = m.probes(t)
			r := Run(context.Background(), o)
			names := []string{CheckRoot, CheckNetns, CheckNftables, CheckQEMU, CheckTools, CheckQEMUUser, CheckImage, CheckAccel, CheckDiskCache, CheckDiskTemp}
			if len(r.Checks) != len(names) {
				t.Fatalf("%d checks, want %d:\n%s", len(r.Checks), len(names), r.Text())
			}
			failed := 0
			for i, c := range r.Checks {
				if c.Name != names[i] {
					t.Errorf("check %d is %q, want %q", i, c.Name, names[i])
				}
				want := tt.want[c.Name]
				if want == "" {
					want = OK
				}
				if c.Status != want {
					t.Errorf("%s: %s, want %s", c.Name, c.Status, want)
				}
				if (c.Status == OK) != (c.Fix == "") {
					t.Errorf("%s: a check says what to do exactly when it did not pass: %+v", c.Name, c)
				}
				if s := tt.says[c.Name]; s != "" && !strings.Contains(c.String(), s) {
					t.Errorf("%s says\n  %s\nwant it to say\n  %s", c.Name, c, s)
				}
				if c.Status == Failed {
					failed++
					if err := r.Err(); err == nil || !strings.Contains(err.Error(), c.String()) {
						t.Errorf("Err() lacks the failure %q: %v", c, err)
					}
				}
			}
			if (failed == 0) != (r.Err() == nil) {
				t.Errorf("%d failures, Err() = %v", failed, r.Err())
			}
			if r.Accel.Accel != tt.accel {
				t.Errorf("Report.Accel = %+v, want %q", r.Accel, tt.accel)
			}
			if t.Failed() {
				t.Logf("report:\n%s", r.Text())
			}
		})
	}
}

// TestEverythingAtOnce: a runner where nothing works gets every failure in one error.
func TestEverythingAtOnce(t *testing.T) {
	m := healthy()
	m.euid, m.network = 1000, netns.ProbeResult{Namespace: errPerm, TAP: errPerm, Firewall: errPerm}
	m.noQEMU, m.missing, m.noUser = true, map[string]bool{"git": true}, true
	m.image = errors.New("failed to load image /srv/img: no manifest.json")
	m.known = &sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: "/dev/kvm unusable: permission denied"}
	m.free = map[string]uint64{"/var/cache/bumper": 1, "/runner/_temp": 1}
	o := opts()
	o.Image, o.Probes = "/srv/img", m.probes(t)
	r := Run(context.Background(), o)
	err := r.Err()
	if err == nil {
		t.Fatal("nothing failed")
	}
	if got := len(r.With(Failed)); got != 10 {
		t.Errorf("%d failures, want all 10:\n%s", got, r.Text())
	}
	if !strings.HasPrefix(err.Error(), "this runner cannot run Bumper (10 of 10 checks failed):\n") || strings.Count(err.Error(), "\n") != 10 {
		t.Errorf("Err():\n%v", err)
	}
}

func TestCanaryBootsTheImagesKernel(t *testing.T) {
	m := healthy()
	o := opts()
	o.Image, o.Probes = "/srv/images/abc", m.probes(t)
	Run(context.Background(), o)
	if len(m.canaryBoots) != 1 || m.canaryBoots[0] != testKernel {
		t.Errorf("canary boots %v, want the image's kernel once", m.canaryBoots)
	}
}

func TestFromInputs(t *testing.T) {
	in := ghaction.Inputs{Accel: "kvm", AllowTCG: true, Image: "/i", Cache: "/c", QEMUUser: "vm"}
	got := FromInputs(in, "/t")
	want := Options{Accel: "kvm", AllowTCG: true, Image: "/i", Cache: "/c", RunnerTemp: "/t", QEMUUser: "vm"}
	if got.Accel != want.Accel || got.AllowTCG != want.AllowTCG || got.Image != want.Image || got.Cache != want.Cache ||
		got.RunnerTemp != want.RunnerTemp || got.QEMUUser != want.QEMUUser {
		t.Errorf("FromInputs = %+v, want %+v", got, want)
	}
	if FromInputs(in, "").RunnerTemp == "" {
		t.Error("no runner temp outside Actions")
	}
}

func TestReportRendering(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: CheckRoot, Status: OK, Detail: "running as root"},
		{Name: CheckDiskTemp, Status: Warning, Detail: "3.0 GiB | free", Fix: "free some"},
	}}
	if r.Err() != nil {
		t.Errorf("a warning is not a failure: %v", r.Err())
	}
	if got := r.Text(); got != "ok       root: running as root\nwarning  disk: runner temp: 3.0 GiB | free; free some\n" {
		t.Errorf("Text:\n%s", got)
	}
	if got := r.Markdown(); !strings.Contains(got, "| disk: runner temp | ⚠️ warning | 3.0 GiB \\| free; free some |") {
		t.Errorf("Markdown:\n%s", got)
	}
}
