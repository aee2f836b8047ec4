package demo

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// userRepo is a local checkout the demo runs on instead of the sample.
type userRepo struct {
	dir    string
	name   string
	head   string
	policy repoconfig.Config
	// hasWorkflow says whether HEAD holds the runner workflow; without it the demo adds
	// one commit that does.
	hasWorkflow bool
}

// policyExample is what a repository needs at least, shown when it has no policy. Its
// first line names the file's JSON Schema to editors.
const policyExample = repoconfig.SchemaModeline + `
version: 1
harness:
  name: command
  command: sh scripts/agent.sh      # or: name: claude-code, version: <release>
verification:
  - make test                       # what must pass before a pull request opens
environment:                        # the toolchain the VM needs (docs/environments.md)
  packages: [golang-go]`

// inspectRepo checks that dir is a checkout the demo can take as it is: committed, with
// a policy that parses. Only committed files go in: the emulator gets the history.
func inspectRepo(ctx context.Context, dir string) (*userRepo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve --repo %s: %w", dir, err)
	}
	top, err := git(ctx, abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("--repo %s is not a git checkout: give the directory of a repository's clone: %w", dir, err)
	}
	top = strings.TrimSpace(top)
	head, err := git(ctx, top, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("--repo %s has no commit yet: commit what the demo should work on", dir)
	}
	status, err := git(ctx, top, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return nil, fmt.Errorf("failed to read the status of %s: %w", top, err)
	}
	if s := strings.TrimSpace(status); s != "" {
		lines := strings.Split(s, "\n")
		if len(lines) > 5 {
			lines = append(lines[:5], fmt.Sprintf("… and %d more", len(lines)-5))
		}
		return nil, fmt.Errorf("%s has uncommitted changes; only committed files go into the emulator (it gets the history up to HEAD): commit or stash them first\n  %s",
			top, strings.Join(lines, "\n  "))
	}
	raw, err := git(ctx, top, "show", "HEAD:"+policyPath)
	if err != nil {
		return nil, fmt.Errorf("%s has no %s at HEAD: Bumper reads its policy from there. Add one, for example:\n\n%s\n\n(docs/usage.md lists every setting), commit it and run the demo again", top, policyPath, policyExample)
	}
	policy, err := repoconfig.Parse([]byte(raw))
	if err != nil {
		return nil, fmt.Errorf("%s at HEAD of %s: %w", policyPath, top, err)
	}
	_, werr := git(ctx, top, "cat-file", "-e", "HEAD:"+workflowPath)
	return &userRepo{dir: top, name: repoName(filepath.Base(top)), head: strings.TrimSpace(head), policy: policy, hasWorkflow: werr == nil}, nil
}

var notRepoChar = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// repoName is a GitHub repository name for a directory's name.
func repoName(base string) string {
	n := strings.Trim(notRepoChar.ReplaceAllString(base, "-"), "-.")
	if n == "" {
		return "project"
	}
	return n
}

// seed is the world for a user's repository: the default seed's people and App, the
// repository empty but for a placeholder commit that push replaces, unprotected until
// the history is in.
func (u *userRepo) seed() *ghemu.Seed {
	s := ghemu.DefaultSeed()
	r := &s.Repositories[0]
	r.Name, r.Description, r.Protected = u.name, "Your repository, from "+u.dir, nil
	r.Files = map[string]string{"README.md": "Replaced by the demo's push.\n"}
	return s
}

// push puts the checkout's history into the emulator's repository as its main branch,
// with the runner workflow added in one commit when HEAD has none (the App dispatches
// it), then protects main as the sample's is.
func (u *userRepo) push(ctx context.Context, e *ghemu.Emulator, work string) error {
	clone := filepath.Join(work, "repo")
	if _, err := cloneGit(ctx, "", "clone", "--quiet", "--no-local", "--no-checkout", u.dir, clone); err != nil {
		return fmt.Errorf("failed to clone %s: %w", u.dir, err)
	}
	if _, err := cloneGit(ctx, clone, "checkout", "--quiet", "--detach", u.head); err != nil {
		return fmt.Errorf("failed to check out %s: %w", u.head, err)
	}
	if !u.hasWorkflow {
		wf, err := workflowYAML()
		if err != nil {
			return err
		}
		p := filepath.Join(clone, filepath.FromSlash(workflowPath))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("failed to add the runner workflow: %w", err)
		}
		if err := os.WriteFile(p, []byte(wf), 0o644); err != nil {
			return fmt.Errorf("failed to add the runner workflow: %w", err)
		}
		if _, err := cloneGit(ctx, clone, "add", workflowPath); err != nil {
			return fmt.Errorf("failed to add the runner workflow: %w", err)
		}
		if _, err := cloneGit(ctx, clone, "-c", "user.name=Bumper demo", "-c", "user.email=demo@bumper.invalid",
			"commit", "--quiet", "-m", "Add Bumper's runner workflow (bumper demo)"); err != nil {
			return fmt.Errorf("failed to commit the runner workflow: %w", err)
		}
	}
	remote, err := url.Parse(e.BaseURL() + "/" + ghemu.DefaultOrg + "/" + u.name + ".git")
	if err != nil {
		return fmt.Errorf("failed to make the emulator's clone URL: %w", err)
	}
	remote.User = url.UserPassword(ghemu.DefaultMaintainer, e.UserToken(ghemu.DefaultMaintainer))
	if _, err := cloneGit(ctx, clone, "push", "--quiet", "--force", remote.String(), "HEAD:refs/heads/main"); err != nil {
		return fmt.Errorf("failed to push %s into the emulator: %w", u.dir, err)
	}
	return e.SetBranchProtection(ghemu.DefaultOrg, u.name, ghemu.SeedProtection{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1})
}

// workflowYAML is the runner workflow the sample repository holds.
func workflowYAML() (string, error) {
	b, err := sampleFS.ReadFile(sampleRoot + "/" + workflowPath)
	if err != nil {
		return "", fmt.Errorf("failed to read the sample's runner workflow: %w", err)
	}
	return string(b), nil
}

// git runs git in dir, the user's checkout, and returns its standard output; its error
// holds git's stderr. The user's own configuration applies (what their git shows them as
// committed is what the demo takes), the system's does not.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return runGit(ctx, dir, []string{"GIT_CONFIG_NOSYSTEM=1"}, args...)
}

// cloneGit runs git in the demo's own clone: neither the user's nor the system's git
// configuration (hooks, templates, rewrites) changes what is committed and pushed.
func cloneGit(ctx context.Context, dir string, args ...string) (string, error) {
	return runGit(ctx, dir, []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}, args...)
}

func runGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
