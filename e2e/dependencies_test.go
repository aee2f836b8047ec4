package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/ghemu"
)

// libRepo is the private Go module of the owner that the Go module's policy lists as a
// dependency; otherRepo is a repository of the same owner, in the same installation,
// that it does not list.
const (
	libRepo   = "lib"
	otherRepo = "other"
)

// goDependencyPolicy is goPolicy with the owner's lib as a dependency and verification
// that lets go add what the agent's go.mod asks for: the same environment section, so
// the same environment (its key hashes the section, go.mod and go.sum).
func goDependencyPolicy() string {
	p := strings.Replace(goPolicy, "verification:\n  - go vet ./...\n  - go test -json ./...\n",
		"verification:\n  - GOFLAGS=-mod=mod go vet ./...\n  - GOFLAGS=-mod=mod go test -json ./...\n", 1)
	return p + "dependencies:\n  repositories: [" + ghemu.DefaultOrg + "/" + libRepo + "]\n"
}

// withLib adds the owner's lib (a Go module, github.com/acme/lib, whose package exports
// Double) and another private repository, both in the App's installation, which covers
// all of acme's repositories, and both readable by the maintainer who approves.
func withLib(s *ghemu.Seed) {
	for _, name := range []string{libRepo, otherRepo} {
		r := ghemu.SeedRepository{Owner: ghemu.DefaultOrg, Name: name, Private: true, DefaultBranch: "main",
			Collaborators: map[string]string{ghemu.DefaultMaintainer: "read"},
			Files:         map[string]string{"README.md": "# " + name + "\n"}}
		if name == libRepo {
			r.Files["go.mod"] = "module github.com/" + ghemu.DefaultOrg + "/" + libRepo + "\n\ngo 1.22\n"
			r.Files["lib.go"] = "// Package lib is the owner's shared code.\npackage lib\n\n// Double returns 2n.\nfunc Double(n int) int { return 2 * n }\n"
		}
		s.Repositories = append(s.Repositories, r)
	}
}

// TestRunWithPrivateGoModule: a Go module whose go.mod asks for a Go newer than Debian's,
// and whose change requires a private module of another repository of the same owner,
// listed in its policy's dependencies, gets a pull request whose verification's real go
// test passed in the VM, with the toolchain its environment installed from the Go module
// proxy and the agent's test of the private module: go fetched
// the module through the firewall's git gateway with the dependency's own token, as the
// runner's git rewrites and GOPRIVATE sent it. The agent's push to that repository is
// refused and the repository is unchanged; a repository of the owner the policy does not
// list is refused, straight and through the gateway. The audit log names the dependency
// for each fetch, and the evidence lists it.
func TestRunWithPrivateGoModule(t *testing.T) {
	files := goModule(t)
	w := newWorld(t, options{ownImages: true, runnerEnv: []string{"BUMPER_CA_FILE=" + hostCABundle}, seed: withLib, files: func(f map[string]string) {
		for _, name := range []string{"widgets.sh", "test.sh"} {
			delete(f, name)
		}
		for name, content := range files {
			f[name] = content
		}
		f[".github/bumper.yml"] = goDependencyPolicy()
	}})
	git := w.e.Git()
	refs, err := git.Refs(w.ctx, ghemu.DefaultOrg, libRepo)
	if err != nil {
		t.Fatal(err)
	}
	if err := git.UpdateRef(w.ctx, ghemu.DefaultOrg, libRepo, "refs/tags/v0.1.0", refs["refs/heads/main"], ""); err != nil {
		t.Fatal(err)
	}
	libBefore, err := git.Refs(w.ctx, ghemu.DefaultOrg, libRepo)
	if err != nil {
		t.Fatal(err)
	}

	lib, other := ghemu.DefaultOrg+"/"+libRepo, ghemu.DefaultOrg+"/"+otherRepo
	r := w.runIssue("Quadruple with the lib", "Add Quadruple(n) with "+lib+"'s Double, with a test.\n\nscenario: golib\nlib: "+lib+"\nother: "+other+"\n", "success")
	out, ev := r.out, r.ev
	// The Go environment: built when the runner host has not (the first run on a machine),
	// found otherwise; either way the evidence says which, and the VM booted the
	// environment's own image, not its base.
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
	t.Logf("the agent's log:\n%s", agentLog)
	for _, want := range []string{
		"agent: go version go1.25", // the module's release, which the environment installed
		"agent: go.mod | require github.com/" + lib + " v0.1.0",
		"agent: lib push: refused",
		"[dependency-read-only]",
		"agent: other ls-remote: refused",
		"agent: other via gateway: refused",
	} {
		if !strings.Contains(string(agentLog), want) {
			t.Errorf("the agent's log does not say %q", want)
		}
	}
	if strings.Contains(string(agentLog), "ACCEPTED") {
		t.Errorf("the agent reached what it may not")
	}

	var goTest *evidence.TestRun
	for i, tr := range ev.Tests {
		if strings.Contains(tr.Command, "go test") {
			goTest = &ev.Tests[i]
		}
	}
	// TestSquares, TestSumConcurrently and the agent's TestQuadruple, which calls the lib.
	if goTest == nil || goTest.Format != "go-test-json" || goTest.ExitCode != 0 || goTest.Passed < 3 || goTest.Failed != 0 {
		t.Fatalf("tests %+v", ev.Tests)
	}
	prs, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.PullRequestListOptions{State: "open"})
	if err != nil || len(prs) != 1 || prs[0].GetHead().GetSHA() != ev.HeadCommit {
		t.Fatalf("%d open pull requests (%v)", len(prs), err)
	}
	// go.mod, go.sum, the code and its test.
	if ev.Diff.FilesChanged != 4 {
		t.Errorf("diff %+v", ev.Diff)
	}
	if !slices.Equal(ev.Dependencies, []string{lib}) {
		t.Errorf("the evidence's dependencies: %v, want [%s]", ev.Dependencies, lib)
	}
	libAfter, err := git.Refs(w.ctx, ghemu.DefaultOrg, libRepo)
	if err != nil || !maps.Equal(libBefore, libAfter) {
		t.Errorf("%s's refs were %v, are %v (%v)", lib, libBefore, libAfter, err)
	}

	// The fetches went through the gateway, each named for the dependency; the push to it
	// and the read of the other repository were refused there. The run's firewall never
	// let the VM reach the module proxy: the public modules came from the environment.
	var fetched, pushRefused, otherRefused bool
	for _, e := range readAuditLines(t, filepath.Join(out, "audit.jsonl")) {
		switch {
		case strings.Contains(e.Target, "golang.org"):
			t.Errorf("the run reached %s (allowed %v): the environment should hold the public modules", e.Target, e.Allowed)
		case strings.Contains(e.Target, "/"+lib+".git/") && e.Allowed:
			if !strings.Contains(e.Reason, "git-upload-pack (dependency "+lib+")") {
				t.Errorf("an allowed request to %s is not a fetch of the dependency: %+v", lib, e)
			}
			fetched = true
		case strings.Contains(e.Target, "/"+lib+".git/") && strings.Contains(e.Reason, "dependency-read-only"):
			pushRefused = true
		case strings.Contains(e.Target, "/"+other+".git/"):
			if e.Allowed {
				t.Errorf("the gateway let a request to %s through: %+v", other, e)
			}
			otherRefused = true
		}
	}
	if !fetched || !pushRefused || !otherRefused {
		t.Errorf("audit log: a fetch of %s %v, its push refused %v, %s refused %v", lib, fetched, pushRefused, other, otherRefused)
	}
}
