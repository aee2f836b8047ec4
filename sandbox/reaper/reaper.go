// Package reaper cleans up after sandbox runs whose owner died without tearing down (for
// example SIGKILLed). Each run keeps a record under StateDir/runs naming its owner
// process; Reap finds records whose owner is gone and removes what they name: the QEMU
// process, the run directory, the network namespace and veth, the address lease.
package reaper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/internal/fsutil"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// Record is one run's state file.
type Record struct {
	ID string `json:"id"`
	// OwnerPID and OwnerStart identify the process that owns the run; the start time
	// guards against a reused pid.
	OwnerPID   int    `json:"owner_pid"`
	OwnerStart uint64 `json:"owner_start"`
	// QEMUPID and QEMUStart identify the VM's process, once started.
	QEMUPID   int    `json:"qemu_pid,omitempty"`
	QEMUStart uint64 `json:"qemu_start,omitempty"`
	// RunDir holds the run's overlay, disks and sockets.
	RunDir string `json:"run_dir,omitempty"`
	// Network says the run made a network namespace (named after ID).
	Network bool `json:"network,omitempty"`
}

func runsDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

// Own returns a record for id owned by the calling process.
func Own(id string) (Record, error) {
	start, err := ProcessStart(os.Getpid())
	if err != nil {
		return Record{}, err
	}
	return Record{ID: id, OwnerPID: os.Getpid(), OwnerStart: start}, nil
}

// Write stores r atomically, replacing an earlier version.
func Write(stateDir string, r Record) error {
	dir := runsDir(stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", dir, err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("failed to encode run record: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, r.ID+".json"), b, 0o600); err != nil {
		return fmt.Errorf("failed to write run record: %w", err)
	}
	return nil
}

// Remove deletes the record of id.
func Remove(stateDir, id string) error {
	err := os.Remove(filepath.Join(runsDir(stateDir), id+".json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove run record %s: %w", id, err)
	}
	return nil
}

// Reap cleans up every run whose owner is no longer alive and returns their IDs.
func Reap(stateDir string) ([]string, error) {
	entries, err := os.ReadDir(runsDir(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list run records: %w", err)
	}
	var reaped []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(runsDir(stateDir), name))
		if err != nil {
			continue // removed by its owner meanwhile
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil || r.ID+".json" != name {
			errs = append(errs, fmt.Errorf("run record %s is corrupt; remove it by hand after checking for leftovers", name))
			continue
		}
		if alive(r.OwnerPID, r.OwnerStart) {
			continue
		}
		if err := reapOne(stateDir, r); err != nil {
			errs = append(errs, fmt.Errorf("failed to reap run %s: %w", r.ID, err))
			continue
		}
		reaped = append(reaped, r.ID)
	}
	return reaped, errors.Join(errs...)
}

func reapOne(stateDir string, r Record) error {
	var errs []error
	if r.QEMUPID > 0 && alive(r.QEMUPID, r.QEMUStart) {
		if err := syscall.Kill(r.QEMUPID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("failed to kill QEMU %d: %w", r.QEMUPID, err))
		}
		// The kernel frees the disks' files only once QEMU is gone.
		for i := 0; i < 100 && alive(r.QEMUPID, r.QEMUStart); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if r.RunDir != "" {
		if err := os.RemoveAll(r.RunDir); err != nil {
			errs = append(errs, fmt.Errorf("failed to remove %s: %w", r.RunDir, err))
		}
	}
	if r.Network {
		ns, veth := netns.Names(r.ID)
		if err := netns.Remove(ns, veth); err != nil {
			errs = append(errs, err)
		}
		if err := netns.ReleaseLeases(netns.DefaultLeaseDir, r.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return Remove(stateDir, r.ID)
}

// alive says whether pid runs and is the same process that started at start (a zero
// start matches any process with that pid). A zombie counts as dead.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	got, state, err := procStat(pid)
	if err != nil || state == "Z" {
		return false
	}
	return start == 0 || got == start
}

// ProcessStart returns the start time of pid in clock ticks since boot.
func ProcessStart(pid int) (uint64, error) {
	start, _, err := procStat(pid)
	return start, err
}

func procStat(pid int) (uint64, string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", fmt.Errorf("failed to read process %d: %w", pid, err)
	}
	// The command name may hold spaces and parentheses; fields resume after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", fmt.Errorf("failed to parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return 0, "", fmt.Errorf("failed to parse /proc/%d/stat", pid)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("failed to parse /proc/%d/stat: %w", pid, err)
	}
	return start, f[0], nil
}
