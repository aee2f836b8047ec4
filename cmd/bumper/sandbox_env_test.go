package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/envbuild"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestSandboxRunEnvRefusals: what `bumper sandbox run --env` refuses before it boots
// anything, each saying what to do instead. An id that is a path is refused as not an
// id: it never reaches the file system.
func TestSandboxRunEnvRefusals(t *testing.T) {
	cache := t.TempDir()
	shared := "81eeeafe1234"
	keyA, keyB := "sha256:"+shared+strings.Repeat("a", 52), "sha256:"+shared+strings.Repeat("b", 52)
	// Two images whose keys share their first 12 digits. The prefix is ambiguous before
	// any image is loaded, so a manifest holding the key is all each needs.
	for i, key := range []string{keyA, keyB} {
		dir := filepath.Join(image.ImagesDir(cache), fmt.Sprintf("%064d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		manifest := fmt.Sprintf(`{"derivation": {"key": %q}}`, key)
		if err := os.WriteFile(filepath.Join(dir, image.ManifestFile), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runEnv := func(id string, more ...string) []string {
		return append([]string{"sandbox", "run", "--cache", cache, "--env", id}, append(more, "--", "true")...)
	}
	const notID = "is not an environment id"
	runCLICases(t, []cliCase{
		{name: "help names the flag", args: []string{"help", "sandbox"}, wantStderr: "-env ID"},
		{name: "with --image", args: runEnv(keyA, "--image", t.TempDir()), wantCode: 2, wantStderr: "--env and --image"},
		{name: "no command", args: []string{"sandbox", "run", "--env", keyA}, wantCode: 2, wantStderr: "no command"},
		{name: "a relative path", args: runEnv("../images/" + fmt.Sprintf("%064d", 0)), wantCode: 2, wantStderr: notID},
		{name: "an absolute path", args: runEnv("/etc"), wantCode: 2, wantStderr: notID},
		{name: "too short", args: runEnv("sha256:" + shared[:11]), wantCode: 2, wantStderr: notID},
		{name: "not hex", args: runEnv("sha256:" + strings.Repeat("z", 64)), wantCode: 2, wantStderr: notID},
		{name: "sha256: with 65 digits", args: runEnv(keyA + "a"), wantCode: 2, wantStderr: notID},
		{name: "ambiguous", args: runEnv(shared), wantCode: 1, wantStderr: "ambiguous: sha256:" + shared + " starts 2 derivation keys, give more digits: " + keyA + ", " + keyB},
		{name: "absent", args: runEnv("sha256:" + strings.Repeat("0", 12)), wantCode: 1,
			wantStderr: "no environment with id sha256:000000000000 is in the cache " + cache},
		{name: "absent says how to build it", args: runEnv(strings.Repeat("0", 12)), wantCode: 1, wantStderr: "run bumper env build DIR first, with the same --cache"},
		{name: "a cache never used", args: []string{"sandbox", "run", "--cache", filepath.Join(cache, "none"), "--env", keyA, "--", "true"}, wantCode: 1,
			wantStderr: "no environment with id " + keyA + " is in the cache " + filepath.Join(cache, "none")},
	})
}

// TestSandboxRunEnv: an environment built as `bumper env build` builds it boots through
// `bumper sandbox run --env` given the first 12 digits of its id, with what its setup
// left in the agent's home and the run's own workspace.
func TestSandboxRunEnv(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	imagetest.SkipUnlessCanBuild(t)
	start := time.Now()
	// The image cache is shared by every test on the machine and outlives them: a value of
	// this run's own in the setup script makes the environment's key new.
	value := fmt.Sprintf("environment of run %d", time.Now().UnixNano())
	repo := t.TempDir()
	script := fmt.Sprintf("set -e\nprintf '%%s\\n' '%s' > \"$HOME/bumper-env-test\"\n", value)
	if err := os.WriteFile(filepath.Join(repo, "setup.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := imagetest.CacheDir()
	var log bytes.Buffer
	res, err := envbuild.Build(context.Background(), envbuild.Options{
		RepoDir: repo, Env: repoconfig.Environment{Setup: "setup.sh"},
		Image: image.BuildConfig{CacheDir: cache, AgentBinary: imagetest.AgentBinary(t)},
		VM: sandbox.Config{CPUs: 1, MemoryMB: 512, Accel: sandbox.AccelTCG,
			StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"), Timeout: 5 * time.Minute},
		Audit: filepath.Join(t.TempDir(), "setup-audit.jsonl"), Log: &log,
	})
	if err != nil {
		t.Fatalf("envbuild.Build: %v\n%s", err, log.String())
	}
	// Derived images are a full root filesystem each: this run's go with it.
	t.Cleanup(func() { os.RemoveAll(res.Image.Dir()) })
	if !res.Built {
		t.Fatalf("the environment %s was found, not built: its key is not new", res.Key.Digest)
	}
	built := time.Since(start)

	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimPrefix(res.Key.Digest, "sha256:")[:image.MinKeyPrefix]
	var stdout, stderr bytes.Buffer
	runStart := time.Now()
	// Cold: a snapshot would outlive this run's image in the shared cache.
	code := run(t.Context(), []string{"sandbox", "run", "--env", prefix, "--cache", cache, "--cold", "--accel", sandbox.AccelTCG, "-v",
		"--cpus", "1", "--memory", "512M", "--workspace", ws, "--", "sh", "-c", "cat ~/bumper-env-test in.txt"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code = %d; stderr: %s", code, stderr.String())
	}
	if want := value + "\nworkspace\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "sandbox: accel tcg") {
		t.Errorf("the run did not say it used TCG; stderr: %s", stderr.String())
	}
	t.Logf("environment built in %v, sandbox run --env in %v", built.Round(time.Millisecond), time.Since(runStart).Round(time.Millisecond))
}
