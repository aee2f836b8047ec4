package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

func TestWarmStart(t *testing.T) {
	skipUnlessCanBoot(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	cfg := testImageConfig(t, im)
	cfg.SnapshotDir = filepath.Join(t.TempDir(), "snapshots")
	cfg.WorkspaceDiskMB = 512

	// Without a snapshot the machine cold-boots and says why.
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b := m.Boot(); b.Mode != "cold" || b.Reason == "" {
		t.Errorf("boot without snapshot = %+v, want cold with a reason", b)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}

	made, err := PrepareSnapshot(ctx, cfg)
	if err != nil || !made {
		t.Fatalf("PrepareSnapshot = %v, %v; want a new snapshot", made, err)
	}
	if made, err := PrepareSnapshot(ctx, cfg); err != nil || made {
		t.Fatalf("second PrepareSnapshot = %v, %v; want the existing one reused", made, err)
	}

	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("warm input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two restores of one snapshot, each with its own overlay and workspace.
	for i, want := range []string{"warm input\n", "warm input\n"} {
		c := cfg
		c.WorkspaceDir = ws
		m, err := New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx); err != nil {
			t.Fatalf("restore %d: %v", i, err)
		}
		if b := m.Boot(); b.Mode != "warm" {
			t.Fatalf("restore %d booted %+v, want warm", i, b)
		}
		var out, errOut bytes.Buffer
		res, err := m.Run(ctx, []string{"sh", "-c", "cat in.txt; echo changed > /etc/motd-test 2>/dev/null; date +%Y"}, nil, &out, &errOut)
		if err != nil {
			t.Fatalf("restore %d Run: %v", i, err)
		}
		if res.ExitCode != 0 || !bytes.HasPrefix(out.Bytes(), []byte(want)) {
			t.Errorf("restore %d: exit %d output %q stderr %q, want %q first", i, res.ExitCode, out.String(), errOut.String(), want)
		}
		t.Logf("restore %d steps: %v", i, m.Steps())
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	// A changed VM shape has no snapshot: cold again, with the reason.
	c := cfg
	c.MemoryMB = 640
	m, err = New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b := m.Boot(); b.Mode != "cold" {
		t.Errorf("boot with changed memory = %+v, want cold", b)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
}
