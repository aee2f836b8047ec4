package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/sandbox/netns"
)

// stateDir is where the sandbox keeps its run records (sandbox.Config.StateDir's
// default, which `bumper run` uses).
const stateDir = "/run/bumper"

// runnerPID finds the `bumper run` the local runner started from bin: tests on other
// packages may run VMs too, so only this binary's process counts.
func runnerPID(t *testing.T, bin string) int {
	t.Helper()
	var found []int
	for _, pid := range pids() {
		argv := cmdline(pid)
		if len(argv) >= 2 && argv[0] == bin && argv[1] == "run" {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d `bumper run` processes of %s, want 1", len(found), bin)
	}
	return found[0]
}

// runRecord is what the sandbox records of a run for its reaper.
type runRecord struct {
	ID       string `json:"id"`
	OwnerPID int    `json:"owner_pid"`
	QEMUPID  int    `json:"qemu_pid"`
	RunDir   string `json:"run_dir"`
	Network  bool   `json:"network"`
}

// recordsOf are the sandbox's run records owned by pid.
func recordsOf(t *testing.T, pid int) []runRecord {
	t.Helper()
	dir := filepath.Join(stateDir, "runs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("no run records in %s: %v", dir, err)
	}
	var out []runRecord
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var r runRecord
		if json.Unmarshal(data, &r) == nil && r.OwnerPID == pid {
			out = append(out, r)
		}
	}
	return out
}

// checkGone fails when anything of the records is left: the record, QEMU, the network
// namespace (with its TAP and nftables table), the host's veth, the run directory.
func checkGone(t *testing.T, recs []runRecord) {
	t.Helper()
	for _, r := range recs {
		ns, veth := netns.Names(r.ID)
		if _, err := os.Stat(filepath.Join(stateDir, "runs", r.ID+".json")); err == nil {
			t.Errorf("run %s: its record is still there", r.ID)
		}
		if r.QEMUPID > 0 && processAlive(r.QEMUPID) {
			t.Errorf("run %s: QEMU %d still runs", r.ID, r.QEMUPID)
		}
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			t.Errorf("run %s: network namespace %s still exists", r.ID, ns)
		}
		if _, err := net.InterfaceByName(veth); err == nil {
			t.Errorf("run %s: host veth %s still exists", r.ID, veth)
		}
		if r.RunDir != "" {
			if _, err := os.Stat(r.RunDir); err == nil {
				t.Errorf("run %s: run directory %s still exists", r.ID, r.RunDir)
			}
		}
	}
}

// waitGone waits until every record's QEMU has exited and returns when it saw that.
func waitGone(t *testing.T, recs []runRecord, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		alive := false
		for _, r := range recs {
			if r.QEMUPID > 0 && processAlive(r.QEMUPID) {
				alive = true
			}
		}
		if !alive {
			return time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("QEMU still runs %v later", limit)
	return time.Time{}
}

func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
}

// processAlive: the process exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
