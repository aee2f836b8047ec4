package envbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/internal/environment"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// repo writes a checkout with a setup script that fills a cache path from an input file.
func repo(t *testing.T, deps string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"setup.sh": "set -e\nmkdir -p \"$HOME/.cache/demo\"\ncp deps.txt \"$HOME/.cache/demo/deps\"\necho leftover > /out/plan.md\necho setup done\n",
		"deps.txt": deps,
		"README":   "a repository\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func options(t *testing.T, dir string, env repoconfig.Environment) Options {
	return Options{
		RepoDir: dir, Env: env,
		Image: image.BuildConfig{CacheDir: imagetest.CacheDir(), AgentBinary: imagetest.AgentBinary(t)},
		VM: sandbox.Config{CPUs: 1, MemoryMB: 512, Accel: sandbox.AccelTCG,
			StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"), Timeout: 5 * time.Minute},
		Audit: filepath.Join(t.TempDir(), "setup-audit.jsonl"),
	}
}

// TestBuild: a setup runs once and its cache path is in the derived image; the same
// inputs find that image again without running anything; a changed input builds a new
// one; a setup that reaches a host off its list fails with the firewall's refusal in its
// audit log, and nothing is cached.
func TestBuild(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	imagetest.SkipUnlessCanBuild(t)
	ctx := context.Background()
	env := repoconfig.Environment{Setup: "setup.sh", Inputs: []string{"deps.txt"}, CachePaths: []string{repoconfig.AgentHome + "/.cache/demo"}}
	// The image cache is shared by every test on the machine and outlives them: inputs
	// of this run's own make its key new, so the first build really builds.
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	dir := repo(t, "v1 "+run+"\n")

	var log bytes.Buffer
	o := options(t, dir, env)
	o.Log = &log
	first, err := Build(ctx, o)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	if !first.Built || first.Image.Manifest().Derivation == nil || first.Image.Manifest().Derivation.Key != first.Key.Digest || !strings.Contains(log.String(), "setup done") {
		t.Fatalf("first build: built %v, manifest %+v, log %q", first.Built, first.Image.Manifest(), log.String())
	}
	t.Logf("setup session %v", first.Setup.Round(time.Millisecond))
	t.Cleanup(func() { os.RemoveAll(first.Image.Dir()) })
	// The environment is kept as a delta over its base: what the setup changed.
	if first.Image.RootfsFormat() != image.FormatQcow2 || first.Image.Manifest().Parent != first.Base.Manifest().Digest {
		t.Errorf("the environment's image is %s over %s, want a qcow2 delta over the base %s", first.Image.RootfsFormat(), first.Image.Manifest().Parent, first.Base.Manifest().Digest)
	}
	if st, err := os.Stat(first.Image.RootfsPath()); err != nil || st.Sys().(*syscall.Stat_t).Blocks*512 > 64<<20 {
		t.Errorf("the environment's delta: %v, %v; want under 64 MiB on disk", st, err)
	} else {
		t.Logf("the environment's delta takes %d KiB on disk", st.Sys().(*syscall.Stat_t).Blocks/2)
	}

	// The derived image holds what the setup left.
	cfg := o.VM
	cfg.UseImage(sandbox.ImageFiles(first.Image))
	var out bytes.Buffer
	// The setup's cache is there; what it left in /out is not (every run would start
	// with a plan it never wrote).
	rep, err := sandbox.Run(ctx, sandbox.Spec{Config: cfg, Argv: []string{"sh", "-c", "cat " + repoconfig.AgentHome + "/.cache/demo/deps; ls -A /out"}, Stdout: &out, Stderr: &out})
	if err != nil || rep.ExitCode != 0 || out.String() != "v1 "+run+"\n" {
		t.Fatalf("in the derived image: %v, %+v, %q", err, rep, out.String())
	}

	again, err := Build(ctx, options(t, dir, env))
	if err != nil || again.Built || again.Image.Dir() != first.Image.Dir() || again.Key.Digest != first.Key.Digest {
		t.Fatalf("second build: %v, built %v, %s vs %s", err, again.Built, again.Image.Dir(), first.Image.Dir())
	}

	changed, err := Build(ctx, options(t, repo(t, "v2 "+run+"\n"), env))
	if err != nil || !changed.Built || changed.Key.Digest == first.Key.Digest {
		t.Fatalf("a changed input: %v, built %v, key %s", err, changed.Built, changed.Key.Digest)
	}
	t.Cleanup(func() { os.RemoveAll(changed.Image.Dir()) })

	t.Run("a setup reaching a host off its list", func(t *testing.T) {
		dir := repo(t, "v3 "+run+"\n")
		script := "set -e\ngit ls-remote https://example.com/x.git\n"
		if err := os.WriteFile(filepath.Join(dir, "setup.sh"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		o := options(t, dir, env)
		_, err := Build(ctx, o)
		// The error quotes the firewall's own audit line: the host and why.
		if err == nil || !strings.Contains(err.Error(), "nothing was cached") || !strings.Contains(err.Error(), `"target":"example.com:443"`) ||
			!strings.Contains(err.Error(), `"allowed":false`) || !strings.Contains(err.Error(), "add the host to environment.allow") {
			t.Fatalf("Build: %v", err)
		}
		base, berr := image.Build(ctx, o.Image)
		if berr != nil {
			t.Fatal(berr)
		}
		key, kerr := environment.Key(base.Manifest().Digest, env, dir)
		if kerr != nil {
			t.Fatal(kerr)
		}
		if _, found := image.FindDerived(filepath.Dir(base.Dir()), key.Digest); found {
			t.Fatal("the failed setup's image was cached")
		}
		f, _ := os.Open(o.Audit)
		defer f.Close()
		var refused bool
		data, _ := os.ReadFile(o.Audit)
		if _, verr := audit.Verify(f, ""); verr == nil && bytes.Contains(data, []byte(`"target":"example.com:443"`)) && bytes.Contains(data, []byte(`"allowed":false`)) {
			refused = true
		}
		if !refused {
			t.Fatalf("the setup's audit log does not show the refusal:\n%s", data)
		}
	})
}
