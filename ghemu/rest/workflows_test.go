package rest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// TestPushTouchingWorkflowsNeedsTheWorkflowsPermission: GitHub refuses a GitHub App's
// push whose new commits add, change or delete a file under .github/workflows/ unless
// its installation token has workflows: write; the whole push is refused and no ref
// moves.
func TestPushTouchingWorkflowsNeedsTheWorkflowsPermission(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	app := emutest.AppClient(t, e)
	mint := func(perms *github.InstallationPermissions) string {
		tok, _, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
			Repositories: []string{repo}, Permissions: perms,
		})
		if err != nil {
			t.Fatal(err)
		}
		return tok.GetToken()
	}
	contents := mint(&github.InstallationPermissions{Contents: github.String("write")})
	workflows := mint(&github.InstallationPermissions{Contents: github.String("write"), Workflows: github.String("write")})
	wf := ".github/workflows/" + ghemu.DefaultWorkflow
	refusal := "refusing to allow a GitHub App to create or update workflow `" + wf + "` without `workflows` permission"

	// A commit is files to write ("" deletes the file).
	type commit map[string]string
	tests := []struct {
		name    string
		token   string
		commits []commit
		// extra is a second branch pushed in the same push, from main plus one clean
		// commit.
		extra  bool
		refuse string // "" when the push is accepted
	}{
		{name: "contents only: a workflow changed", token: contents,
			commits: []commit{{wf: "name: pwned\non: push\n", "notes.txt": "x\n"}}, refuse: refusal},
		{name: "contents only: other files", token: contents,
			commits: []commit{{"notes.txt": "x\n", ".github/dependabot.yml": "version: 2\n"}}},
		{name: "workflows: a workflow changed", token: workflows,
			commits: []commit{{wf: "name: changed\non: push\n"}}},
		{name: "contents only: a workflow added", token: contents,
			commits: []commit{{".github/workflows/new.yml": "on: push\n"}},
			refuse:  "refusing to allow a GitHub App to create or update workflow `.github/workflows/new.yml` without `workflows` permission"},
		{name: "contents only: a workflow change in the second of three commits", token: contents,
			commits: []commit{{"a.txt": "a\n"}, {wf: "name: sneaky\non: push\n"}, {"c.txt": "c\n"}}, refuse: refusal},
		{name: "contents only: a workflow changed, then deleted", token: contents,
			commits: []commit{{wf: "name: sneaky\non: push\n"}, {wf: ""}}, refuse: refusal},
		{name: "contents only: a workflow deleted", token: contents,
			commits: []commit{{wf: ""}}, refuse: refusal},
		{name: "contents only: with a clean branch in the same push", token: contents,
			commits: []commit{{wf: "name: pwned\non: push\n"}}, extra: true, refuse: refusal},
		{name: "workflows: a workflow deleted", token: workflows,
			commits: []commit{{wf: ""}}},
		{name: "a user's token: a workflow changed", token: e.UserToken(ghemu.DefaultMaintainer),
			commits: []commit{{wf: "name: mine\non: push\n"}}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "w")
			if out, err := emutest.Git(t, ctx, "", "clone", "-q", emutest.CloneURL(e, tc.token), work); err != nil {
				t.Fatalf("clone: %v\n%s", err, out)
			}
			git := func(args ...string) string {
				t.Helper()
				out, err := emutest.Git(t, ctx, work, args...)
				if err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(out)
			}
			branch := "t/" + string(rune('a'+i))
			git("checkout", "-q", "-b", branch)
			for n, c := range tc.commits {
				for path, content := range c {
					if content == "" {
						git("rm", "-q", path)
						continue
					}
					if err := os.MkdirAll(filepath.Dir(filepath.Join(work, path)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(work, path), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
					git("add", path)
				}
				git("commit", "-q", "-m", "commit "+string(rune('1'+n)))
			}
			refspecs := []string{branch}
			if tc.extra {
				git("checkout", "-q", "-b", branch+"-clean", "origin/main")
				if err := os.WriteFile(filepath.Join(work, "clean.txt"), []byte("clean\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				git("add", "clean.txt")
				git("commit", "-q", "-m", "clean")
				refspecs = append(refspecs, branch+"-clean")
			}
			before := git("ls-remote", "origin")
			out, err := emutest.Git(t, ctx, work, append([]string{"push", "origin"}, refspecs...)...)
			after := git("ls-remote", "origin")
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("push refused: %v\n%s", err, out)
				}
				if want := git("rev-parse", branch); !strings.Contains(after, want+"\trefs/heads/"+branch+"\n") && !strings.HasSuffix(after, want+"\trefs/heads/"+branch) {
					t.Errorf("%s is not at %s after the push:\n%s", branch, want, after)
				}
				return
			}
			if err == nil {
				t.Fatalf("push accepted; want %q:\n%s", tc.refuse, out)
			}
			for _, rs := range refspecs {
				if want := " ! [remote rejected] " + rs + " -> " + rs + " (" + tc.refuse + ")"; !strings.Contains(out, want) {
					t.Errorf("the push does not say %q:\n%s", want, out)
				}
			}
			if after != before {
				t.Errorf("refs moved:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}

	t.Run("contents only: a new branch at commits already on the host", func(t *testing.T) {
		// The commits that changed the workflow are on the host already (pushed with
		// workflows: write above); naming them again brings nothing new.
		work := filepath.Join(t.TempDir(), "w")
		if out, err := emutest.Git(t, ctx, "", "clone", "-q", emutest.CloneURL(e, contents), work); err != nil {
			t.Fatalf("clone: %v\n%s", err, out)
		}
		if out, err := emutest.Git(t, ctx, work, "push", "origin", "origin/t/c:refs/heads/t/again"); err != nil {
			t.Fatalf("push refused: %v\n%s", err, out)
		}
	})
}
