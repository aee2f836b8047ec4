package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
	"github.com/bumperdev/bumper/sandbox/reaper"
)

// helperEnv carries the child's configuration in TestSIGKILLedOwnerIsReaped.
const helperEnv = "BUMPER_SANDBOX_REAPER_HELPER"

// TestReaperHelper is the child process that TestSIGKILLedOwnerIsReaped kills mid-run.
func TestReaperHelper(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("helper process for TestSIGKILLedOwnerIsReaped; runs only when that test starts it")
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Config: cfg, Argv: []string{"sh", "-c", "echo started; sleep 600"}, Stdout: os.Stdout, Stderr: os.Stderr}
	if os.Geteuid() == 0 {
		spec.StartProxy = func(_ context.Context, listen string) (func() error, error) {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return nil, err
			}
			srv := &http.Server{Handler: http.NotFoundHandler()}
			go srv.Serve(ln)
			return srv.Close, nil
		}
	}
	_, err := Run(context.Background(), spec)
	t.Fatalf("Run returned although it should have been killed: %v", err)
}

func TestSIGKILLedOwnerIsReaped(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	cfg := testImageConfig(t, im)
	cfg.StateDir = t.TempDir()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReaperHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(raw))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "started") {
				started <- true
				return
			}
		}
		started <- false
	}()
	select {
	case ok := <-started:
		if !ok {
			cmd.Wait()
			t.Fatal("the helper ended before its command started")
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the helper's command did not start within 2 minutes")
	}
	records, _ := filepath.Glob(filepath.Join(cfg.StateDir, "runs", "*.json"))
	if len(records) != 1 {
		t.Fatalf("found %d run records while running, want 1", len(records))
	}
	id := strings.TrimSuffix(filepath.Base(records[0]), ".json")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	reaped, err := reaper.Reap(cfg.StateDir)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if len(reaped) != 1 || reaped[0] != id {
		t.Fatalf("reaped %v, want [%s]", reaped, id)
	}
	assertNothingLeft(t, cfg.RunDir)
	if _, err := os.Stat(filepath.Join("/run/netns", "bumper-"+id)); err == nil {
		t.Errorf("namespace bumper-%s survived the reaper", id)
	}
	if out, _ := exec.Command("ip", "link", "show", "bmp"+id+"h").CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Errorf("veth of %s survived the reaper: %s", id, out)
	}
	for _, pattern := range []string{"runs/*", "net/*"} {
		if left, _ := filepath.Glob(filepath.Join(cfg.StateDir, pattern)); len(left) != 0 {
			t.Errorf("state files left: %v", left)
		}
	}
	if again, err := reaper.Reap(cfg.StateDir); err != nil || len(again) != 0 {
		t.Errorf("second Reap = %v, %v; want nothing to do", again, err)
	}
}
