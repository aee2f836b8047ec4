package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/ghemu"
)

// goModule is the Go module of action/envbuild's toolchain test: its go.mod asks for a
// Go newer than Debian's, and its setup script installs that release from the Go module
// proxy.
func goModule(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "action", "envbuild", "testdata", "gotoolchain")
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil || files["go.mod"] == "" || files["scripts/env-setup.sh"] == "" {
		t.Fatalf("the Go module: %v (%d files)", err, len(files))
	}
	return files
}

// hostCABundle is Debian's CA bundle, which update-ca-certificates fills with the
// host's own CAs too.
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// goPolicy is the Go module's .github/bumper.yml: the scripted agent, the module's
// real tests as verification, and the environment that gives them their Go.
const goPolicy = "version: 1\n" +
	"harness:\n  name: command\n  command: sh .bumper/agent.sh\n" +
	"verification:\n  - go vet ./...\n  - go test -json ./...\n" +
	"bounds:\n  verification_rounds: 1\n  wall_time: 20m\n" +
	"reviewer: false\n" +
	"environment:\n  packages: [golang-go]\n  setup: scripts/env-setup.sh\n  inputs: [go.mod, go.sum]\n" +
	"  allow: [proxy.golang.org]\n  cache_paths: [~/go/pkg/mod, ~/.cache/go-build]\n"

// TestRunInGoEnvironment: a repository whose go.mod asks for a Go newer than Debian's
// gets a pull request whose verification ran its real test suite in the VM, with the
// toolchain its environment installed from the Go module proxy. The run builds the
// environment when the runner host has not (the first run on a machine), and finds it
// otherwise; either way the evidence says which, and the VM booted the environment's
// image. The run's own firewall does not allow the proxy: the tests pass from what the
// setup left in the image.
func TestRunInGoEnvironment(t *testing.T) {
	files := goModule(t)
	// The runner host trusts what this host trusts: where TLS is inspected on the way
	// out (this workplace, a company's network), the guest must trust that CA too.
	w := newWorld(t, options{ownImages: true, runnerEnv: []string{"BUMPER_CA_FILE=" + hostCABundle}, files: func(f map[string]string) {
		for _, name := range []string{"widgets.sh", "test.sh"} {
			delete(f, name)
		}
		for name, content := range files {
			f[name] = content
		}
		f[".github/bumper.yml"] = goPolicy
	}})
	r := w.runIssue("Count the squares", "Add Count(n), the number of squares Squares(n) yields, with a test.\n\nscenario: gocount", "success")
	out, ev := r.out, r.ev
	env := ev.Environment
	if env == nil || ev.Sandbox == nil || env.ImageDigest != ev.Sandbox.ImageDigest || env.ImageDigest == env.BaseImageDigest || env.Setup != "scripts/env-setup.sh" {
		t.Fatalf("environment %+v, sandbox %+v", env, ev.Sandbox)
	}
	t.Logf("environment %s: built %v in %dms (setup %dms)", env.ID, env.Built, env.DurationMS, env.SetupMS)
	if env.Built {
		if setupLog, _ := os.ReadFile(filepath.Join(out, env.Log)); !strings.Contains(string(setupLog), "go version go1.") {
			t.Fatalf("the setup's log:\n%s", setupLog)
		}
	}
	agentLog, _ := os.ReadFile(filepath.Join(out, "agent-round-1.log"))
	if !strings.Contains(string(agentLog), "agent: go version go1.25") {
		t.Fatalf("the agent's go is not the module's:\n%s", agentLog)
	}
	var goTest *evidence.TestRun
	for i, tr := range ev.Tests {
		if strings.HasPrefix(tr.Command, "go test") {
			goTest = &ev.Tests[i]
		}
	}
	// TestSquares, TestSumConcurrently and the agent's TestCount: the real suite ran.
	if goTest == nil || goTest.Format != "go-test-json" || goTest.ExitCode != 0 || goTest.Passed < 3 || goTest.Failed != 0 {
		t.Fatalf("tests %+v", ev.Tests)
	}
	prs, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.PullRequestListOptions{State: "open"})
	if err != nil || len(prs) != 1 || prs[0].GetHead().GetSHA() != ev.HeadCommit || ev.Diff.FilesChanged != 2 {
		t.Fatalf("%d open pull requests (%v); diff %+v", len(prs), err, ev.Diff)
	}
	// The run's firewall never let the VM reach the module proxy: no download.
	for _, e := range readAuditLines(t, filepath.Join(out, "audit.jsonl")) {
		if strings.Contains(e.Target, "golang.org") {
			t.Fatalf("the run reached %s (allowed %v): the environment should hold everything", e.Target, e.Allowed)
		}
	}
}
