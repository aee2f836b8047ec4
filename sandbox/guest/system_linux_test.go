package guest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
)

func TestLiveProcessOf(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   bool
	}{
		{"running as the user", "Name:\tsleep\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\n", true},
		{"a set-uid program the user started", "State:\tS (sleeping)\nUid:\t1000\t0\t0\t0\n", true},
		{"another user", "State:\tR (running)\nUid:\t0\t0\t0\t0\n", false},
		{"a zombie", "State:\tZ (zombie)\nUid:\t1000\t1000\t1000\t1000\n", false},
		{"dead", "State:\tX (dead)\nUid:\t1000\t1000\t1000\t1000\n", false},
		{"uid as a prefix only", "State:\tS (sleeping)\nUid:\t10000\t10000\t10000\t10000\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := liveProcessOf(tt.status, 1000); got != tt.want {
				t.Errorf("liveProcessOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKillUserRefusesRoot(t *testing.T) {
	if _, err := (LinuxSystem{}).KillUser(0); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("KillUser(0) = %v, want a refusal", err)
	}
}

// TestKillUserLeavesNothing attacks KillUser as a command's leftovers would: background
// sleepers and a loop that keeps forking new ones, so that a single scan-and-kill pass
// misses the children forked after it. Nothing of the user may be alive afterwards.
func TestKillUserLeavesNothing(t *testing.T) {
	testgate.RequiresRoot(t)
	// A uid nothing else on the machine uses (QEMU of other tests runs as nobody).
	const uid = 54321
	cmd := exec.Command("sh", "-c", `sleep 1000 & sleep 1000 & while :; do sleep 1000 & sleep 0.01; done`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The sh is reaped by KillUser (it is this process's child), so it is not waited for.
	// The count moves (each loop's short sleep comes and goes): wait for a margin above
	// what the test needs, and judge the count that was seen, not a second one.
	n := 0
	for range 500 {
		if n = countLive(t, uid); n >= 8 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n < 5 {
		t.Fatalf("%d processes of uid %d before KillUser, want the loop and its sleepers", n, uid)
	}
	left, err := (LinuxSystem{}).KillUser(uid)
	if err != nil {
		t.Fatalf("KillUser: %v", err)
	}
	if left < 5 {
		t.Errorf("KillUser found %d processes, want at least the %d seen before", left, 5)
	}
	if n = countLive(t, uid); n != 0 {
		t.Errorf("%d processes of uid %d alive after KillUser", n, uid)
	}
}

// countLive counts the live processes of uid.
func countLive(t *testing.T, uid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/status"); err == nil && liveProcessOf(string(b), uid) {
			n++
		}
	}
	return n
}
