// Package preflight checks, before a run asks serve for anything, that this runner can
// run it: root, network namespaces and TAP devices, nftables, QEMU and the host tools,
// the QEMU user, the accelerator (the sandbox's KVM canary), the image, and free disk.
// Every check runs and says what it found; each failure says what is wrong and what to
// do, and Report.Err joins them, so one run shows everything to fix.
//
// The probes are small functions in Options.Probes, the real ones by default, so tests
// can fake a machine without root, without nftables or with a broken KVM.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bumperdev/bumper/action/ghaction"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// Status is a check's result.
type Status string

// The statuses. A warning does not stop the run.
const (
	OK      Status = "ok"
	Warning Status = "warning"
	Failed  Status = "failed"
)

// The checks' names, in the order Run reports them.
const (
	CheckRoot      = "root"
	CheckNetns     = "network namespaces"
	CheckNftables  = "nftables"
	CheckQEMU      = "qemu"
	CheckTools     = "host tools"
	CheckQEMUUser  = "qemu user"
	CheckImage     = "image"
	CheckAccel     = "accelerator"
	CheckDiskCache = "disk: cache"
	CheckDiskTemp  = "disk: runner temp"
)

// Free-space thresholds of the disk checks: an image is ~250 MB, a snapshot ~100 MB, a
// run's overlay, workspace and output disks grow with what the agent writes.
const (
	WarnFreeBytes = 5 << 30
	FailFreeBytes = 1 << 30
)

// TCGCost says how much slower a run is under TCG than under KVM, from
// docs/benchmarks.md: cold boots of 4.4–5.1 s against under a second, a git clone of
// 19–22 s against about a second.
const TCGCost = "about 5× slower to boot and up to 20× slower for CPU-bound work such as git, compilers and tests"

// BuildCost says what building the default image costs, from docs/benchmarks.md.
const BuildCost = "about a minute the first time (47 s measured: kernel download, debootstrap, mkfs; ~2 minutes with extra packages), about 10 s for a new bumper binary once the Debian parts are cached"

// Check is one precondition and what was found.
type Check struct {
	Name   string
	Status Status
	// Detail is what was found, or what is wrong.
	Detail string
	// Fix is what to do about a failure or a warning; empty when the check passed.
	Fix string
}

// String is the check in one line: "name: detail; fix".
func (c Check) String() string {
	if c.Fix == "" {
		return c.Name + ": " + c.Detail
	}
	return c.Name + ": " + c.Detail + "; " + c.Fix
}

// Report is every check's result.
type Report struct {
	Checks []Check
	// Accel is the accelerator the runs here get and why, when the checks could tell:
	// empty when only the KVM canary can, and it needs an image that does not exist yet
	// (AccelCheck tells once it does).
	Accel sandbox.AccelChoice
}

// Err joins the failed checks, one per line; nil when none failed.
func (r Report) Err() error {
	var errs []error
	for _, c := range r.Checks {
		if c.Status == Failed {
			errs = append(errs, errors.New(c.String()))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("this runner cannot run Bumper (%d of %d checks failed):\n%w", len(errs), len(r.Checks), errors.Join(errs...))
}

// With returns the checks of one status.
func (r Report) With(s Status) []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == s {
			out = append(out, c)
		}
	}
	return out
}

// Text is the report for a log, one check a line.
func (r Report) Text() string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-8s %s\n", c.Status, c)
	}
	return b.String()
}

// Markdown is the report as a table, for the job summary.
func (r Report) Markdown() string {
	var b strings.Builder
	b.WriteString("| check | result | details |\n|---|---|---|\n")
	icon := map[Status]string{OK: "✅ ok", Warning: "⚠️ warning", Failed: "❌ failed"}
	for _, c := range r.Checks {
		d := c.Detail
		if c.Fix != "" {
			d += "; " + c.Fix
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, icon[c.Status], mdCell(d))
	}
	return b.String()
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

// Options are what the run will need, from the action's inputs.
type Options struct {
	// Accel is auto, kvm or tcg; AllowTCG lets auto fall back to TCG.
	Accel    string
	AllowTCG bool
	// Image is an image directory; "" means the default image, built or reused in Cache.
	Image string
	// Cache holds images and warm-start snapshots.
	Cache string
	// RunnerTemp is where the job's temporary files go ($RUNNER_TEMP).
	RunnerTemp string
	// QEMUUser is the user QEMU drops to.
	QEMUUser string
	// QEMU is the QEMU binary (default qemu-system-x86_64).
	QEMU string
	// StateDir is the sandbox's state directory, where the KVM canary's result is cached
	// (default the sandbox's, /run/bumper).
	StateDir string
	// Probes are the probes of the machine; nil fields are the real ones.
	Probes Probes
}

// FromInputs are the Options for the action's inputs; runnerTemp is the job's
// RUNNER_TEMP ("": the system's temporary directory).
func FromInputs(in ghaction.Inputs, runnerTemp string) Options {
	if runnerTemp == "" {
		runnerTemp = os.TempDir()
	}
	return Options{Accel: in.Accel, AllowTCG: in.AllowTCG, Image: in.Image, Cache: in.Cache,
		RunnerTemp: runnerTemp, QEMUUser: in.QEMUUser}
}

// Run runs every check and reports them all.
func Run(ctx context.Context, o Options) Report {
	o = o.withDefaults()
	p := o.Probes
	var r Report
	add := func(c Check) { r.Checks = append(r.Checks, c) }

	root := p.Euid() == 0
	add(rootCheck(p.Euid()))
	nsCheck, nftCheck := networkChecks(p.Network(), root)
	add(nsCheck)
	add(nftCheck)
	add(qemuCheck(ctx, o))
	add(toolsCheck(p))
	add(qemuUserCheck(o))
	imgCheck, kernel := imageCheck(o)
	add(imgCheck)
	accel, choice := AccelCheck(ctx, o, kernel)
	add(accel)
	r.Accel = choice
	add(diskCheck(CheckDiskCache, o.Cache, p))
	add(diskCheck(CheckDiskTemp, o.RunnerTemp, p))
	return r
}

func (o Options) withDefaults() Options {
	if o.Accel == "" {
		o.Accel = sandbox.AccelAuto
	}
	if o.Cache == "" {
		o.Cache = image.DefaultCacheDir
	}
	if o.RunnerTemp == "" {
		o.RunnerTemp = os.TempDir()
	}
	if o.QEMU == "" {
		o.QEMU = "qemu-system-x86_64"
	}
	o.Probes = o.Probes.withDefaults()
	return o
}

func rootCheck(euid int) Check {
	if euid == 0 {
		return Check{Name: CheckRoot, Status: OK, Detail: "running as root"}
	}
	return Check{Name: CheckRoot, Status: Failed,
		Detail: fmt.Sprintf("running as uid %d, not root: each run's network namespace, TAP device and nftables rules need root", euid),
		Fix:    "run the self-hosted runner as root (docs/runner-host.md, \"The self-hosted runner\")"}
}

func networkChecks(r netns.ProbeResult, root bool) (ns, nft Check) {
	nsFix := "the kernel must allow network namespaces (CONFIG_NET_NS); in a container, give it CAP_SYS_ADMIN and CAP_NET_ADMIN"
	tapFix := "load the tun module (modprobe tun) and check that /dev/net/tun exists"
	nftFix := "apt-get install nftables, and check that the kernel has nf_tables, nft_nat, nft_masq, nft_reject and nft_ct (`nft list ruleset` works)"
	if !root {
		nsFix, tapFix, nftFix = "run as root (see the root check)", "run as root (see the root check)", "run as root (see the root check)"
	}
	switch {
	case r.Namespace != nil:
		ns = Check{Name: CheckNetns, Status: Failed, Detail: r.Namespace.Error(), Fix: nsFix}
	case r.TAP != nil:
		ns = Check{Name: CheckNetns, Status: Failed, Detail: "a network namespace works, but " + r.TAP.Error(), Fix: tapFix}
	default:
		ns = Check{Name: CheckNetns, Status: OK, Detail: "a throwaway network namespace with a TAP device was made and removed"}
	}
	switch {
	case r.Namespace != nil:
		nft = Check{Name: CheckNftables, Status: Failed, Detail: "not tried: no network namespace to try it in", Fix: "see the network namespaces check"}
	case r.Firewall != nil:
		nft = Check{Name: CheckNftables, Status: Failed, Detail: r.Firewall.Error(), Fix: nftFix}
	default:
		nft = Check{Name: CheckNftables, Status: OK, Detail: "a run's table (DNAT, masquerade, reject, conntrack) was installed in a throwaway namespace"}
	}
	return ns, nft
}

func qemuCheck(ctx context.Context, o Options) Check {
	v, err := o.Probes.QEMUVersion(ctx, o.QEMU)
	if err != nil {
		return Check{Name: CheckQEMU, Status: Failed, Detail: err.Error(), Fix: "apt-get install qemu-system-x86"}
	}
	return Check{Name: CheckQEMU, Status: OK, Detail: v}
}

// hostTools are the programs a run uses besides QEMU, with their Debian packages.
var hostTools = []struct{ bin, pkg, why string }{
	{"qemu-img", "qemu-utils", "the run's copy-on-write disk"},
	{"mkfs.ext4", "e2fsprogs", "the workspace and output disks"},
	{"git", "git", "the workspace, fetched on the host"},
}

func toolsCheck(p Probes) Check {
	var missing, pkgs, found []string
	for _, t := range hostTools {
		if _, err := p.LookPath(t.bin); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", t.bin, t.why))
			pkgs = append(pkgs, t.pkg)
		} else {
			found = append(found, t.bin)
		}
	}
	if len(missing) > 0 {
		return Check{Name: CheckTools, Status: Failed, Detail: "missing " + strings.Join(missing, ", "),
			Fix: "apt-get install " + strings.Join(pkgs, " ")}
	}
	return Check{Name: CheckTools, Status: OK, Detail: strings.Join(found, ", ") + " found"}
}

func qemuUserCheck(o Options) Check {
	if o.QEMUUser == "" {
		return Check{Name: CheckQEMUUser, Status: Warning, Detail: "no qemu-user: QEMU keeps the runner's privileges (root)",
			Fix: "set qemu-user to an unprivileged user (default nobody; a dedicated system user is best)"}
	}
	if err := o.Probes.LookupUser(o.QEMUUser); err != nil {
		return Check{Name: CheckQEMUUser, Status: Failed, Detail: err.Error(),
			Fix: "create it (useradd --system --no-create-home --shell /usr/sbin/nologin bumper-vm) or set qemu-user to a user that exists"}
	}
	return Check{Name: CheckQEMUUser, Status: OK, Detail: fmt.Sprintf("QEMU runs as %s", o.QEMUUser)}
}

// imageCheck checks the image input, and returns the kernel the KVM canary can boot
// ("" when no image is at hand yet).
func imageCheck(o Options) (Check, string) {
	p := o.Probes
	if o.Image != "" {
		im, err := p.LoadImage(o.Image)
		if err != nil {
			return Check{Name: CheckImage, Status: Failed, Detail: err.Error(),
				Fix: "pass an image directory that `sudo bumper image build` printed, or leave image empty for the default image"}, ""
		}
		c := Check{Name: CheckImage, Status: OK, Detail: fmt.Sprintf("%s loads and verifies (%s)", im.Digest, im.About)}
		if err := p.Writable(o.Cache); err != nil {
			c.Status, c.Fix = Warning, fmt.Sprintf("the cache %s is not writable (%v): warm-start snapshots cannot be kept, every run boots cold; fix the cache input or its permissions", o.Cache, err)
		}
		return c, im.Kernel
	}
	if err := p.Writable(o.Cache); err != nil {
		return Check{Name: CheckImage, Status: Failed,
			Detail: fmt.Sprintf("no image input, and the default image cannot be built: the cache %s is not writable: %v", o.Cache, err),
			Fix:    "set cache to a writable directory, or image to a prebuilt image directory"}, ""
	}
	im, found := p.CachedImage(o.Cache)
	buildErr := p.BuildHost()
	switch {
	case found && buildErr != nil:
		return Check{Name: CheckImage, Status: Warning,
			Detail: fmt.Sprintf("images are cached in %s (newest %s), but no new one can be built here: %v", o.Cache, im.Digest, buildErr),
			Fix:    "a run needs the image of its own bumper binary: install what is missing, or set image to a prebuilt image directory"}, im.Kernel
	case found:
		return Check{Name: CheckImage, Status: OK,
			Detail: fmt.Sprintf("the default image is reused from %s, or rebuilt at the start of the run when this bumper binary's differs (newest cached: %s); a build takes %s", o.Cache, im.Digest, BuildCost)}, im.Kernel
	case buildErr != nil:
		return Check{Name: CheckImage, Status: Failed,
			Detail: fmt.Sprintf("no image input, none cached in %s, and the default image cannot be built here: %v", o.Cache, buildErr),
			Fix:    "install what is missing, or set image to a prebuilt image directory"}, ""
	}
	return Check{Name: CheckImage, Status: OK,
		Detail: fmt.Sprintf("no image in %s yet: the run builds the default image first, %s; later runs reuse it", o.Cache, BuildCost)}, ""
}

// AccelCheck is the accelerator check: what the run's VM would run under, against what
// the inputs allow. It decides from the sandbox's own probe (sandbox.KnownAccel, then
// its KVM canary booting kernel); with no kernel yet and no cached canary result it can
// only say so, and the run should check again once its image exists.
func AccelCheck(ctx context.Context, o Options, kernel string) (Check, sandbox.AccelChoice) {
	o = o.withDefaults()
	p := o.Probes
	if o.Accel == sandbox.AccelTCG {
		choice := sandbox.AccelChoice{Accel: sandbox.AccelTCG, Reason: "TCG requested"}
		if o.AllowTCG {
			return Check{Name: CheckAccel, Status: OK, Detail: "TCG requested and allowed: the VM runs under software emulation, " + TCGCost}, choice
		}
		return Check{Name: CheckAccel, Status: Failed, Detail: "accel is tcg, which runs the VM under software emulation, " + TCGCost,
			Fix: "set allow-tcg: true to accept that, or accel: auto to use KVM where it works"}, sandbox.AccelChoice{}
	}
	// accel auto or kvm: find out what KVM does here; the sandbox skips its canary when
	// kvm is forced, so the check asks as auto would.
	cfg := sandbox.Config{Accel: sandbox.AccelAuto, Kernel: kernel, QEMU: o.QEMU, StateDir: o.StateDir}
	choice, known := p.KnownAccel(cfg)
	if !known && kernel != "" {
		choice, known = p.ChooseAccel(ctx, cfg), true
	}
	if !known {
		why := "which is not built yet"
		if o.Image != "" {
			why = "and the image does not load (see the image check)"
		}
		c := Check{Name: CheckAccel, Status: Warning,
			Detail: "/dev/kvm opens, but only the KVM canary can tell whether guests run under it (some nested hosts hang), and it boots the image's kernel, " + why,
			Fix:    "the run checks again once its image exists and stops there if KVM does not work; set allow-tcg: true to run under TCG then"}
		if o.AllowTCG && o.Accel == sandbox.AccelAuto {
			c.Status, c.Fix = OK, ""
			c.Detail += "; the canary decides at the first boot, and TCG is allowed if KVM does not work"
		}
		return c, sandbox.AccelChoice{}
	}
	if choice.Accel == sandbox.AccelKVM {
		return Check{Name: CheckAccel, Status: OK, Detail: "KVM works here (" + choice.Reason + ")"}, choice
	}
	switch {
	case o.Accel == sandbox.AccelKVM:
		return Check{Name: CheckAccel, Status: Failed, Detail: "accel is kvm, but KVM does not work here (" + choice.Reason + ")",
			Fix: "fix KVM on this runner, or set accel: auto and allow-tcg: true to run under TCG, " + TCGCost}, sandbox.AccelChoice{}
	case o.AllowTCG:
		return Check{Name: CheckAccel, Status: OK,
			Detail: "KVM does not work here (" + choice.Reason + "): the VM runs under TCG, as allow-tcg allows, " + TCGCost}, choice
	}
	return Check{Name: CheckAccel, Status: Failed, Detail: "KVM does not work here (" + choice.Reason + ")",
		Fix: "set allow-tcg: true to run under TCG, " + TCGCost}, sandbox.AccelChoice{}
}

func diskCheck(name, dir string, p Probes) Check {
	free, at, err := p.FreeBytes(dir)
	if err != nil {
		return Check{Name: name, Status: Failed, Detail: fmt.Sprintf("cannot tell the free space of %s: %v", dir, err), Fix: "check that the directory or one of its parents exists"}
	}
	where := dir
	if at != dir {
		where = fmt.Sprintf("%s (not there yet; measured at %s)", dir, at)
	}
	d := fmt.Sprintf("%s free in %s", gib(free), where)
	switch {
	case free < FailFreeBytes:
		return Check{Name: name, Status: Failed, Detail: d, Fix: fmt.Sprintf("free at least %s there (%s recommended): `sudo bumper image prune` removes unused images and snapshots", gib(FailFreeBytes), gib(WarnFreeBytes))}
	case free < WarnFreeBytes:
		return Check{Name: name, Status: Warning, Detail: d, Fix: fmt.Sprintf("below %s a run may fill the disk: free some space (`sudo bumper image prune` removes unused images and snapshots)", gib(WarnFreeBytes))}
	}
	return Check{Name: name, Status: OK, Detail: d}
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
