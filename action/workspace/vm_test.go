package workspace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/guest"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestGuestPaths: the guest paths this package hands out are the ones the guest agent
// mounts and returns.
func TestGuestPaths(t *testing.T) {
	if GuestDir != guest.WorkspaceDir || GuestOut != guest.OutDir {
		t.Fatalf("GuestDir %s, GuestOut %s; the agent uses %s and %s", GuestDir, GuestOut, guest.WorkspaceDir, guest.OutDir)
	}
}

// vmConfig is a sandbox configuration for the shared test image.
func vmConfig(t testing.TB, im *image.Image) sandbox.Config {
	return sandbox.Config{
		Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline,
		CPUs: 2, MemoryMB: 1024, RunDir: t.TempDir(), StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"),
		Timeout: 5 * time.Minute,
	}
}

// TestPreparedWorkspaceInVM boots a real sandbox VM on a workspace prepared through the
// firewall's git gateway: the guest sees the base commit checked out on the work branch
// with a clean status, and the task files; it commits, bundles the work branch into
// /out, and Result reads the commit back.
func TestPreparedWorkspaceInVM(t *testing.T) {
	testgate.RequiresQEMU(t)
	testgate.Command(t, "git", "git")
	im := imagetest.Image(t)
	h := newGitHost(t)
	ctx := testCtx(t)
	src := scratch(t)
	base := h.publish(t, src, realisticRepo(t, src, 1000, 8<<20, 3))
	w, err := Prepare(ctx, h.options(t, base))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer w.Close()

	script := strings.Join([]string{
		"set -e",
		"git -C " + GuestRepo + " log -1 --format=%H",
		"git -C " + GuestRepo + " symbolic-ref HEAD",
		"git -C " + GuestRepo + " status --porcelain | wc -l",
		"cat " + GuestTask + "/TASK.md",
		"cd " + GuestRepo,
		"echo 'frob = 3' > frob.txt",
		"git add frob.txt",
		"git commit -q -m 'Add frob'",
		strings.Join(w.BundleCommand(), " "),
	}, "\n")
	cfg := vmConfig(t, im)
	cfg.WorkspaceDir = w.Dir
	var stdout, stderr bytes.Buffer
	rep, err := sandbox.Run(ctx, sandbox.Spec{Config: cfg, Argv: []string{"sh", "-c", script}, OutDir: w.OutDir, Stdout: &stdout, Stderr: &stderr})
	if err != nil || rep.ExitCode != 0 {
		t.Fatalf("sandbox.Run: %v, %+v\nstdout:\n%s\nstderr:\n%s", err, rep, stdout.String(), stderr.String())
	}
	want := base + "\nrefs/heads/bumper/1-1\n0\n# Add frob\n"
	if stdout.String() != want {
		t.Fatalf("the guest saw:\n%s\nwant:\n%s\nstderr:\n%s", stdout.String(), want, stderr.String())
	}
	r, err := w.Result(ctx)
	if err != nil {
		t.Fatalf("Result: %v", err)
	}
	if r.Commits != 1 || r.Diff.FilesChanged != 1 || r.Diff.Files[0].Path != "frob.txt" || r.Diff.Insertions != 1 {
		t.Errorf("Result = %+v", r)
	}
	if author, _ := w.git.line(ctx, "log", "-1", "--format=%an <%ae>|%cn <%ce>", r.Head); author != "Bumper Agent <agent@bumper.invalid>|Bumper Agent <agent@bumper.invalid>" {
		t.Errorf("the agent's commit is by %q", author)
	}
	t.Logf("boot %s, ready %s, first output %s", rep.Boot.Mode, rep.Ready, rep.FirstOutput)
}

// TestUpdateMergeInVM runs an update run's merge where it runs in production, in a real
// VM on the workspace (the image's git, the repository's identity): the base branch's
// new head conflicts with the pull request's, the merge is left with its markers and the
// unmerged path named; the "agent" resolves and commits it, and Result reads back the
// merge commit, on top of the pull request's head, with the base branch's head as its
// second parent.
func TestUpdateMergeInVM(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	u := newUpdateHost(t)
	ctx := testCtx(t)
	w, err := Prepare(ctx, u.options(t, u.m2))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	script := strings.Join([]string{
		"cd " + GuestRepo,
		"out=$(sh -c '" + strings.ReplaceAll(MergeScript, "'", `'\''`) + "' | tr '\\000' '\\n')",
		"echo \"$out\"",
		"grep -q '^<<<<<<< ' widgets.sh || exit 3",
		"echo 'echo 5 # and then 4' > widgets.sh",
		"git add widgets.sh && git commit -q --no-edit || exit 4",
		strings.Join(w.BundleCommand(), " "),
	}, "\n")
	cfg := vmConfig(t, im)
	cfg.WorkspaceDir = w.Dir
	var stdout, stderr bytes.Buffer
	rep, err := sandbox.Run(ctx, sandbox.Spec{Config: cfg, Argv: []string{"sh", "-c", script}, OutDir: w.OutDir, Stdout: &stdout, Stderr: &stderr,
		Env: []string{MergeEnvUpdateTo + "=" + u.m2, MergeEnvMessage + "=unused"}})
	if err != nil || rep.ExitCode != 0 {
		t.Fatalf("sandbox.Run: %v, %+v\nstdout:\n%s\nstderr:\n%s", err, rep, stdout.String(), stderr.String())
	}
	if got := stdout.String(); got != "bumper-merge: conflicted\nwidgets.sh\n" {
		t.Fatalf("the merge step said %q\nstderr:\n%s", got, stderr.String())
	}
	r, err := w.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if parents, _ := w.git.line(ctx, "log", "-1", "--format=%P", r.Head); r.Commits != 1 || parents != u.p+" "+u.m2 {
		t.Fatalf("Result = %+v; the head's parents %s, want %s %s", r, parents, u.p, u.m2)
	}
}
