// Package testgate decides whether a test that needs something of the machine runs.
//
// Under `go test -short` (make unit) every gated test skips: the unit tier needs no
// root, no QEMU and no network namespaces. Otherwise a test whose need is missing skips
// with what to install, except when CI=true: CI's machine is built to have everything
// (.ci/run installs it), so a missing need there is a broken machine, and the test fails
// instead of passing silently. KVM is the exception: CI's hosts have none that works
// (nested virtualization hangs), so a test that needs it skips everywhere it is absent.
package testgate

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where a missing tool fails.
func InCI() bool { return strings.EqualFold(os.Getenv("CI"), "true") }

// missing skips or, in CI, fails the test for a missing need.
func missing(t testing.TB, what string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI's machine lacks %s; .ci/run must install it", what)
	}
	t.Skipf("needs %s", what)
}

// short skips the test in the unit tier.
func short(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: needs %s", what)
	}
}

// Slow skips a test in the unit tier that downloads, builds or waits for long (what it
// needs is said in why).
func Slow(t testing.TB, why string) {
	t.Helper()
	short(t, why)
}

// Command gates a test on programs being on PATH, named with the Debian package that
// has them, e.g. Command(t, "git", "git").
func Command(t testing.TB, program, debianPackage string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		missing(t, program+" (apt-get install "+debianPackage+")")
	}
}

// RequiresQEMU gates a test that boots a microVM: QEMU, qemu-img and mkfs.ext4. It skips
// under -short.
func RequiresQEMU(t testing.TB) {
	t.Helper()
	short(t, "QEMU")
	Command(t, "qemu-system-x86_64", "qemu-system-x86")
	Command(t, "qemu-img", "qemu-utils")
	Command(t, "mkfs.ext4", "e2fsprogs")
}

// RequiresRoot gates a test that needs root (network namespaces, nftables, mounts,
// dropping privileges). It skips under -short.
func RequiresRoot(t testing.TB) {
	t.Helper()
	short(t, "root")
	if os.Geteuid() != 0 {
		missing(t, "root (run the tests as root: sudo make test)")
	}
}

// RequiresKVM gates a test that needs a usable /dev/kvm. It skips under -short and,
// unlike the others, skips in CI too: the hosts Bumper's CI runs on have no working KVM.
func RequiresKVM(t testing.TB) {
	t.Helper()
	short(t, "KVM")
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("needs KVM (/dev/kvm: %v)", err)
	}
	f.Close()
}

// AgentCLIDir is where scripts/install-deps.sh puts the real agent CLIs' binaries for
// the tests that run them on the host (claude, codex), at the releases the adapters
// were checked against.
const AgentCLIDir = "/var/tmp/bumper-test-clis"

// AgentCLI gates a test that runs a real agent CLI on the host and returns its binary:
// the path in envVar when set, else AgentCLIDir/name. It skips under -short; a binary
// that is not there skips (fails in CI, whose machine install-deps.sh prepares).
func AgentCLI(t testing.TB, envVar, name string) string {
	t.Helper()
	short(t, "the real "+name+" CLI")
	path := os.Getenv(envVar)
	if path == "" {
		path = AgentCLIDir + "/" + name
	}
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
		missing(t, "the real "+name+" binary at "+path+" (scripts/install-deps.sh fetches it; or set "+envVar+")")
	}
	return path
}
