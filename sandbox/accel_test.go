package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestKVMCanaryDecides runs where /dev/kvm opens: the canary boot must decide, never
// hang (on nested hosts /dev/kvm exists and guests hang), and whatever it decides must
// run a command: KVM when the canary booted, TCG with the reason otherwise.
func TestKVMCanaryDecides(t *testing.T) {
	testgate.RequiresQEMU(t)
	testgate.RequiresKVM(t)
	im := imagetest.Image(t)
	cfg := testImageConfig(t, im)
	cfg.StateDir = t.TempDir() // no cached probe: the canary runs
	// A canary cut short by its caller decides nothing and is not cached.
	ended, cancelEnded := context.WithCancel(testContext(t))
	cancelEnded()
	if c := ChooseAccel(ended, cfg); c.Accel != AccelTCG {
		t.Errorf("a canary whose context had ended chose %+v, want TCG", c)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "kvm-probe.json")); err == nil {
		t.Error("a canary whose context had ended was cached")
	}
	// The canary bounds itself (CanaryTimeout); the context only keeps a broken
	// canary from hanging the test suite.
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Minute)
	defer cancel()
	choice := ChooseAccel(ctx, cfg)
	if ctx.Err() != nil {
		t.Fatalf("the canary did not decide: %+v", choice)
	}
	switch choice.Accel {
	case AccelKVM:
		if !strings.Contains(choice.Reason, "booted") {
			t.Fatalf("KVM chosen without a booted canary: %+v", choice)
		}
	case AccelTCG:
		if !strings.Contains(choice.Reason, "canary") {
			t.Fatalf("TCG chosen without saying what the canary found: %+v", choice)
		}
	default:
		t.Fatalf("accel %q", choice.Accel)
	}
	again := ChooseAccel(ctx, cfg)
	if again.Accel != choice.Accel || !strings.Contains(again.Reason, "(cached)") {
		t.Fatalf("the probe was not cached for this host boot: %+v then %+v", choice, again)
	}
	cfg.Accel = choice.Accel
	var out strings.Builder
	rep, err := Run(ctx, Spec{Config: cfg, Argv: []string{"echo", "hi"}, Stdout: &out})
	if err != nil || rep.ExitCode != 0 || strings.TrimSpace(out.String()) != "hi" || rep.Accel.Accel != choice.Accel {
		t.Fatalf("a run under the chosen %s failed: %v, output %q, report %+v", choice.Accel, err, out.String(), rep)
	}
}
