package preflight

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestThisMachine runs the real probes, as root, on this machine: root, network
// namespaces, nftables, QEMU, the host tools, the QEMU user and a real image pass; the
// accelerator is decided by the sandbox's canary booting the image's kernel (on a host
// where /dev/kvm opens but guests hang, as on Bumper's CI, that is TCG: refused without
// allow-tcg, accepted with it, the second time from the canary's cache).
func TestThisMachine(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	testgate.Command(t, "git", "git")
	im := imagetest.Image(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{Accel: sandbox.AccelAuto, Image: im.Dir(), Cache: t.TempDir(), RunnerTemp: t.TempDir(),
		QEMUUser: "nobody", StateDir: t.TempDir()}
	r := Run(ctx, o)
	t.Logf("report:\n%s", r.Text())
	for _, name := range []string{CheckRoot, CheckNetns, CheckNftables, CheckQEMU, CheckTools, CheckQEMUUser, CheckImage} {
		c := find(t, r, name)
		if c.Status != OK {
			t.Errorf("%s: %s", c.Status, c)
		}
	}
	if q := find(t, r, CheckQEMU); !strings.Contains(q.Detail, "QEMU emulator version") {
		t.Errorf("the QEMU check does not give QEMU's version: %s", q)
	}
	for _, name := range []string{CheckDiskCache, CheckDiskTemp} {
		if c := find(t, r, name); c.Status == Failed {
			t.Logf("this machine is short of disk: %s", c) // the machine's state, not the code's
		}
	}

	accel := find(t, r, CheckAccel)
	switch r.Accel.Accel {
	case sandbox.AccelKVM:
		if accel.Status != OK {
			t.Fatalf("KVM works, yet %s", accel)
		}
		return
	case "":
		if accel.Status != Failed || !strings.Contains(accel.String(), "KVM does not work here (") ||
			!strings.Contains(accel.Fix, "set allow-tcg: true to run under TCG, about 5× slower") {
			t.Fatalf("KVM does not work here: the check must fail saying why and how to allow TCG: %s", accel)
		}
	default:
		t.Fatalf("without allow-tcg the report gives accelerator %+v (%s)", r.Accel, accel)
	}
	o.AllowTCG = true
	c, choice := AccelCheck(ctx, o, im.KernelPath())
	if c.Status != OK || choice.Accel != sandbox.AccelTCG {
		t.Errorf("with allow-tcg, TCG: %s, %+v", c, choice)
	}
	// Where a canary ran (rather than /dev/kvm not opening), its result is reused.
	if strings.Contains(accel.Detail, "canary") && !strings.Contains(choice.Reason, "(cached)") {
		t.Errorf("the canary's result was not reused: %+v", choice)
	}
}

func find(t *testing.T, r Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in\n%s", name, r.Text())
	return Check{}
}
