package testgate

import (
	"os"
	"testing"
)

// fakeT records what a gate did to a test.
type fakeT struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Skipf(string, ...any)      { f.skipped = true; panic(f) }
func (f *fakeT) Fatalf(string, ...any)     { f.failed = true; panic(f) }
func (f *fakeT) run(gate func(testing.TB)) { defer func() { _ = recover() }(); gate(f) }

func TestMissingCommand(t *testing.T) {
	gate := func(tb testing.TB) { Command(tb, "bumper-no-such-program", "nothing") }
	tests := []struct {
		name, ci          string
		wantSkip, wantErr bool
	}{
		{"developer machine skips", "", true, false},
		{"CI fails", "true", false, true},
		{"CI=false skips", "false", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			f := &fakeT{}
			f.run(gate)
			if f.skipped != tt.wantSkip || f.failed != tt.wantErr {
				t.Fatalf("skipped=%v failed=%v, want %v %v", f.skipped, f.failed, tt.wantSkip, tt.wantErr)
			}
		})
	}
	t.Run("present command passes", func(t *testing.T) {
		t.Setenv("CI", "true")
		f := &fakeT{}
		f.run(func(tb testing.TB) { Command(tb, "sh", "dash") })
		if f.skipped || f.failed {
			t.Fatal("a present program was gated")
		}
	})
}

func TestKVMNeverFailsCI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short skips every gate")
	}
	t.Setenv("CI", "true")
	f := &fakeT{}
	f.run(RequiresKVM)
	if f.failed {
		t.Fatal("RequiresKVM failed in CI; it must only skip")
	}
	if _, err := os.Stat("/dev/kvm"); err != nil && !f.skipped {
		t.Fatal("no /dev/kvm, yet the test was not skipped")
	}
}
