package app

import (
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// dependencySeed is the default world with four more repositories of acme: lib and
// conf, which the maintainer can read; secret, which they cannot; outside, which the
// App's installation does not cover.
func dependencySeed() *ghemu.Seed {
	seed := ghemu.DefaultSeed()
	for _, r := range []struct {
		name   string
		reader bool
	}{{"lib", true}, {"conf", true}, {"secret", false}, {"outside", true}} {
		sr := ghemu.SeedRepository{Owner: ghemu.DefaultOrg, Name: r.name, Private: true, DefaultBranch: "main",
			Files: map[string]string{"go.mod": "module example.test/" + r.name + "\n"}, Collaborators: map[string]string{}}
		if r.reader {
			sr.Collaborators[ghemu.DefaultMaintainer] = "read"
		}
		seed.Repositories = append(seed.Repositories, sr)
	}
	seed.Installations = []ghemu.SeedInstallation{{Account: ghemu.DefaultOrg,
		Repositories: []string{ghemu.DefaultRepo, "lib", "conf", "secret"}}}
	return seed
}

// setPolicy commits .github/bumper.yml to the default repository's main branch: the
// next work item's base commit.
func (h *harness) setPolicy(policy string) {
	h.t.Helper()
	refs, err := h.e.Git().Refs(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.e.Git().CommitFiles(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "main", refs["refs/heads/main"],
		map[string][]byte{".github/bumper.yml": []byte(policy)}, "Set the policy", gitserver.Signature{Name: "Mae", Email: "mae@example.test"}); err != nil {
		h.t.Fatal(err)
	}
}

// TestExchangeGrantsDependencies: a run whose policy lists other repositories of acme
// gets a second token, contents: read on exactly them, which fetches them and nothing
// else and pushes nowhere; a repository the App is not installed on, one the approver
// cannot read, the run's own and another owner's are refused at the exchange, with the
// approval voided and the issue saying what to do.
func TestExchangeGrantsDependencies(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	h := newHarness(t, dependencySeed())

	t.Run("granted", func(t *testing.T) {
		h.setPolicy("version: 1\ndependencies:\n  repositories: [acme/lib, ACME/conf]\n")
		_, resp := h.granted("Use the lib", "Use acme/lib.")
		if !slices.Equal(resp.Dependencies, []string{"acme/lib", "ACME/conf"}) || resp.DependencyToken == "" ||
			resp.DependencyTokenExpiresAt.IsZero() || resp.DependencyToken == resp.InstallationToken {
			t.Fatalf("dependencies %v, token %q expiring %v", resp.Dependencies, resp.DependencyToken, resp.DependencyTokenExpiresAt)
		}
		var info *ghemu.TokenInfo
		for _, ti := range h.e.InstallationTokens() {
			if ti.Value == resp.DependencyToken {
				info = &ti
			}
		}
		if info == nil {
			t.Fatal("the emulator minted no such token")
		}
		slices.Sort(info.Repositories)
		if !slices.Equal(info.Repositories, []string{"acme/conf", "acme/lib"}) || info.Permissions["contents"] != "read" ||
			len(info.Permissions) != 2 || info.Permissions["metadata"] != "read" {
			t.Fatalf("token scope %v, permissions %v; want acme/conf and acme/lib, contents and metadata read", info.Repositories, info.Permissions)
		}
		dir := t.TempDir()
		git := func(args ...string) (string, error) { return emutest.Git(t, h.ctx, dir, args...) }
		at := func(repo string) string {
			u, _ := url.Parse(h.e.BaseURL() + "/acme/" + repo + ".git")
			u.User = url.UserPassword("x-access-token", resp.DependencyToken)
			return u.String()
		}
		if out, err := git("clone", at("lib"), filepath.Join(dir, "lib")); err != nil {
			t.Fatalf("the dependency token cannot clone acme/lib: %v\n%s", err, out)
		}
		for _, repo := range []string{ghemu.DefaultRepo, "secret", "outside"} {
			if out, err := git("ls-remote", at(repo)); err == nil {
				t.Errorf("the dependency token reads acme/%s:\n%s", repo, out)
			}
		}
		lib := filepath.Join(dir, "lib")
		for _, args := range [][]string{{"-c", "user.name=a", "-c", "user.email=a@b", "commit", "--allow-empty", "-m", "x"}, {"push", "origin", "HEAD:refs/heads/evil"}} {
			out, err := emutest.Git(t, h.ctx, lib, args...)
			if args[0] == "push" && err == nil {
				t.Fatalf("the dependency token pushed to acme/lib:\n%s", out)
			}
		}
	})

	refusals := []struct {
		name, deps, want string
	}{
		{"not installed", "[acme/lib, acme/outside]", "the App is not installed on acme/outside"},
		{"approver cannot read", "[acme/secret]", "cannot read acme/secret"},
		{"own repository", "[acme/widgets]", "the run's own repository"},
		{"another owner", "[evil/lib]", "not acme's"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			h.setPolicy("version: 1\ndependencies:\n  repositories: " + tt.deps + "\n")
			before := len(h.e.InstallationTokens())
			refusedBefore := h.refused(workitem.RefusalDependency)
			n, run := h.approved()
			code, _, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
			if code != http.StatusForbidden || !strings.Contains(body, tt.want) {
				t.Fatalf("exchange: %d %s; want 403 saying %q", code, body, tt.want)
			}
			if got := h.refused(workitem.RefusalDependency); got != refusedBefore+1 {
				t.Errorf("refusals of kind dependency: %v, want %v", got, refusedBefore+1)
			}
			if after := len(h.e.InstallationTokens()); after != before {
				t.Errorf("%d tokens were minted for a refused exchange", after-before)
			}
			h.expectState(n, ledger.AwaitingApproval)
			replies := h.botReplies(n)
			if len(replies) == 0 || !strings.Contains(replies[len(replies)-1], tt.want) || !strings.Contains(replies[len(replies)-1], "no credentials were minted") {
				t.Fatalf("the issue does not say why: %q", replies)
			}
		})
	}
}
