package envbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestNPMEnvironment: the usage guide's Node example, built for real. Debian's nodejs and
// npm come into the image as packages; the setup's `npm ci` reaches the npm registry
// through the setup's firewall (environment.allow: registry.npmjs.org) and fills npm's
// cache, which the image keeps; in the image, with no network at all, `npm ci --offline`
// installs the locked dependency from that cache and the repository's test passes.
func TestNPMEnvironment(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	imagetest.SkipUnlessCanBuild(t)
	access := registryAccess(t, "registry.npmjs.org", "https://registry.npmjs.org/is-number/7.0.0")
	ctx := context.Background()

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "npmproject"))); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, repoconfig.Path))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := repoconfig.Parse(raw)
	if err != nil || cfg.Environment == nil {
		t.Fatalf("testdata/npmproject's %s: %v", repoconfig.Path, err)
	}
	// The image cache outlives the test: a setup script of this run's own makes the
	// environment's key new, so the build really builds.
	setup := filepath.Join(dir, "scripts", "env-setup.sh")
	script, _ := os.ReadFile(setup)
	script = fmt.Appendf(script, "# bumper test run %d\n", time.Now().UnixNano())
	if err := os.WriteFile(setup, script, 0o644); err != nil {
		t.Fatal(err)
	}

	var log bytes.Buffer
	o := goOptions(t, access, dir, *cfg.Environment)
	o.Log = &log
	res, err := Build(ctx, o)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	t.Cleanup(func() { os.RemoveAll(res.Image.Dir()) })
	if !res.Built {
		t.Fatal("the first build found an image")
	}
	t.Logf("npm environment built in %v (setup session)", res.Setup.Round(time.Millisecond))

	// The run's side: the checkout again (without node_modules, which lived on the
	// setup's workspace disk), no network.
	ws := t.TempDir()
	if err := os.CopyFS(filepath.Join(ws, "repo"), os.DirFS(filepath.Join("testdata", "npmproject"))); err != nil {
		t.Fatal(err)
	}
	vm := o.VM
	vm.UseImage(sandbox.ImageFiles(res.Image))
	vm.WorkspaceDir = ws
	var out bytes.Buffer
	rep, err := sandbox.Run(ctx, sandbox.Spec{Config: vm, Stdout: &out, Stderr: &out,
		Argv: []string{"sh", "-c", "cd /workspace/repo && " + cfg.Verification[0]}})
	if err != nil || rep.ExitCode != 0 || !strings.Contains(out.String(), "ok: is-number works") {
		t.Fatalf("the verification in the environment, offline: %v, %+v\n%s", err, rep, out.String())
	}
	// The setup's firewall let the registry through, and only it.
	audit, _ := os.ReadFile(o.Audit)
	if !bytes.Contains(audit, []byte(`"target":"registry.npmjs.org:443"`)) || !bytes.Contains(audit, []byte(`"allowed":true`)) {
		t.Fatalf("the setup's audit log does not show the registry reached:\n%s", audit)
	}
}
