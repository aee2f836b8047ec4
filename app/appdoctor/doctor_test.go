package appdoctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/appdoctor"
	"github.com/bumperdev/bumper/app/setup"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/doctorreport"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// template is the runner workflow users copy.
func template(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", ".github", "workflows", "bumper-run.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// validPolicy is the smallest .github/bumper.yml the runner accepts: one naming a harness.
const validPolicy = "version: 1\nharness: {name: claude-code, version: 2.1.328}\n"

// opts is what `bumper doctor` passes; the version is not the default on purpose, so
// the test sees that the fix names the one it is given.
var opts = appdoctor.Options{ClaudeCodeVersion: "9.8.7"}

// repoSeed is a repository set up as docs/install.md says, changed by edit.
func repoSeed(t *testing.T, name string, edit func(*ghemu.SeedRepository)) ghemu.SeedRepository {
	r := ghemu.SeedRepository{Owner: "acme", Name: name, DefaultBranch: "main",
		Protected: []ghemu.SeedProtection{pinned()},
		Labels:    []ghemu.SeedLabel{{Name: "agent:implement"}},
		Files: map[string]string{"README.md": "# " + name + "\n", ".github/workflows/bumper-run.yml": template(t),
			".github/bumper.yml": validPolicy}}
	if edit != nil {
		edit(&r)
	}
	return r
}

// pinned is main protected as docs/install.md says: an approving review, and
// bumper/verdict required from the App only.
func pinned() ghemu.SeedProtection {
	return ghemu.SeedProtection{Branch: "main", RequiredChecks: []string{"bumper/verdict", "bumper/gates"}, RequiredReviews: 1,
		RequiredCheckApps: map[string]string{"bumper/verdict": "bumper", "bumper/gates": "bumper"}}
}

func config(t *testing.T, e *ghemu.Emulator) app.Config {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.GitHub.V3APIURL = e.BaseURL() + "/"
	cfg.GitHub.App.IntegrationID = e.AppID()
	cfg.GitHub.App.PrivateKey = string(e.AppKeyPEM())
	cfg.GitHub.App.WebhookSecret = e.WebhookSecret()
	cfg.Bumper.RunTokenKey = strings.Repeat("ab", 32)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// want is a finding a broken set-up must produce: its check, its status, and words of
// its detail and of its fix.
type want struct {
	check  string
	status doctorreport.Status
	detail string
	fix    string
}

func find(t *testing.T, got []doctorreport.Finding, w want) {
	t.Helper()
	for _, f := range got {
		if f.Check == w.check && f.Status == w.status && strings.Contains(f.Detail, w.detail) && strings.Contains(f.Fix, w.fix) {
			return
		}
	}
	var b strings.Builder
	doctorreport.NewReport(got).WriteText(&b)
	t.Errorf("no %s %s finding with %q and fix %q; got:\n%s", w.status, w.check, w.detail, w.fix, b.String())
}

// TestRepositories checks a good repository and one broken one per broken set-up, all
// on one emulator whose App has exactly the permissions and events Bumper needs:
// the good one has nothing but ok findings, each broken one its finding and fix.
func TestRepositories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	badWorkflow := strings.NewReplacer("      nonce:\n        description: \"single-use nonce for the token exchange\"\n        required: true\n", "",
		"permissions:\n  id-token: write", "permissions:\n  contents: read",
		"- uses: bumperdev/bumper@v", "- uses: bumperdev/bumper@main # v").Replace(template(t))
	seed := &ghemu.Seed{
		App:           ghemu.SeedApp{Slug: "bumper", Permissions: setup.PermissionMap(), Events: setup.EventNames()},
		Users:         []ghemu.SeedUser{{Login: "ci[bot]", Bot: true}},
		Organizations: []string{"acme", "other"},
		Repositories: []ghemu.SeedRepository{
			repoSeed(t, "good", nil),
			repoSeed(t, "noworkflow", func(r *ghemu.SeedRepository) { delete(r.Files, ".github/workflows/bumper-run.yml") }),
			repoSeed(t, "badworkflow", func(r *ghemu.SeedRepository) { r.Files[".github/workflows/bumper-run.yml"] = badWorkflow }),
			repoSeed(t, "badconfig", func(r *ghemu.SeedRepository) { r.Files[".github/bumper.yml"] = "version: 1\nbounds:\n  attempts: 0\n" }),
			repoSeed(t, "noconfig", func(r *ghemu.SeedRepository) { delete(r.Files, ".github/bumper.yml") }),
			repoSeed(t, "noharness", func(r *ghemu.SeedRepository) { r.Files[".github/bumper.yml"] = "version: 1\n" }),
			repoSeed(t, "unprotected", func(r *ghemu.SeedRepository) { r.Protected = nil }),
			repoSeed(t, "weak", func(r *ghemu.SeedRepository) {
				r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredReviews: 0}}
			}),
			repoSeed(t, "bypass", func(r *ghemu.SeedRepository) {
				r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1, BypassApps: []string{"bumper"}}}
			}),
			repoSeed(t, "unpinned", func(r *ghemu.SeedRepository) {
				r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"ci/test", "bumper/verdict"}, RequiredReviews: 1}}
			}),
			repoSeed(t, "otherpin", func(r *ghemu.SeedRepository) {
				r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1,
					RequiredCheckApps: map[string]string{"bumper/verdict": "ci"}}}
			}),
			repoSeed(t, "nogates", func(r *ghemu.SeedRepository) {
				r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1,
					RequiredCheckApps: map[string]string{"bumper/verdict": "bumper"}}}
			}),
			repoSeed(t, "anygates", func(r *ghemu.SeedRepository) {
				r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict", "bumper/gates"}, RequiredReviews: 1,
					RequiredCheckApps: map[string]string{"bumper/verdict": "bumper"}}}
			}),
			repoSeed(t, "nolabel", func(r *ghemu.SeedRepository) { r.Labels = nil }),
			repoSeed(t, "stray", func(r *ghemu.SeedRepository) { r.Owner = "other" }),
		},
		Installations: []ghemu.SeedInstallation{{Account: "acme"}},
	}
	e := emutest.New(t, ghemu.Options{Seed: seed})
	cfg := config(t, e)
	ciID, ok := e.AppIDBySlug("ci")
	if !ok {
		t.Fatal("no ci App")
	}

	t.Run("good", func(t *testing.T) {
		got := appdoctor.Check(ctx, cfg, "acme/good", opts)
		rep := doctorreport.NewReport(got)
		if rep.Blocking+rep.Warnings > 0 {
			var b strings.Builder
			rep.WriteText(&b)
			t.Fatalf("a good set-up has findings:\n%s", b.String())
		}
		for _, c := range []string{"app.identity", "app.permissions", "repo.installation", "repo.installation_permissions", "repo.workflow", "repo.config", "repo.protection", "repo.verdict_source", "repo.gates_check", "repo.label"} {
			find(t, got, want{check: c, status: doctorreport.OK})
		}
	})

	cases := []struct {
		repo string
		want []want
	}{
		{"other/stray", []want{{"repo.installation", doctorreport.Blocking, "not installed on other/stray", "/installations/new"}}},
		{"acme/noworkflow", []want{{"repo.workflow", doctorreport.Blocking, ".github/workflows/bumper-run.yml is not on", "copy .github/workflows/bumper-run.yml"}}},
		{"acme/badworkflow", []want{
			{"repo.workflow", doctorreport.Blocking, "lacks the inputs nonce", "declare them under on.workflow_dispatch.inputs"},
			{"repo.workflow", doctorreport.Blocking, "does not grant `id-token: write`", "`id-token: write` and nothing else"},
			{"repo.workflow", doctorreport.Warning, "contents: read", "remove them"},
			{"repo.workflow", doctorreport.Warning, "bumperdev/bumper@main is not a release tag", "`uses: bumperdev/bumper@vX.Y.Z`"},
		}},
		{"acme/badconfig", []want{{"repo.config", doctorreport.Blocking, "bounds.attempts is 0", "fix .github/bumper.yml"},
			{"repo.config", doctorreport.Blocking, "is invalid", "its JSON Schema, " + repoconfig.SchemaURL}}},
		{"acme/noconfig", []want{{"repo.config", doctorreport.Blocking, "no .github/bumper.yml on main, so it names no harness",
			"`version: 1` and `harness: {name: claude-code, version: 9.8.7}`"}}},
		{"acme/noharness", []want{{"repo.config", doctorreport.Blocking, ".github/bumper.yml on main names no harness",
			"the Actions secret ANTHROPIC_API_KEY"}}},
		{"acme/unprotected", []want{{"repo.protection", doctorreport.Warning, "main is not protected", "at least 1 approving review and the bumper/verdict check"}}},
		{"acme/weak", []want{
			{"repo.protection", doctorreport.Warning, "does not require an approving review", "at least 1 approving review"},
			{"repo.protection", doctorreport.Warning, "does not require the bumper/verdict check", "add bumper/verdict"},
		}},
		{"acme/bypass", []want{{"repo.protection", doctorreport.Warning, "lets the bumper App bypass", "remove bumper from"}}},
		{"acme/unpinned", []want{{"repo.verdict_source", doctorreport.Warning, "requires bumper/verdict from any source",
			fmt.Sprintf(`Settings → Branches → main → Require status checks to pass → bumper/verdict → expected source: the bumper App; `+
				`or by the API (it replaces the list, so the other required checks are repeated): echo '{"checks":[{"context":"bumper/verdict","app_id":%d},{"context":"ci/test","app_id":-1}]}' | `+
				`gh api -X PATCH repos/acme/unpinned/branches/main/protection/required_status_checks --input -`, e.AppID())}}},
		{"acme/otherpin", []want{{"repo.verdict_source", doctorreport.Warning, fmt.Sprintf("from the App with ID %d, not bumper (ID %d)", ciID, e.AppID()),
			fmt.Sprintf(`"checks":[{"context":"bumper/verdict","app_id":%d}]`, e.AppID())}}},
		{"acme/nogates", []want{{"repo.gates_check", doctorreport.Warning, "does not require the bumper/gates check",
			fmt.Sprintf(`"checks":[{"context":"bumper/gates","app_id":%d},{"context":"bumper/verdict","app_id":%d}]`, e.AppID(), e.AppID())}}},
		{"acme/anygates", []want{{"repo.gates_check", doctorreport.Warning, "requires bumper/gates from a source other than the bumper App",
			fmt.Sprintf(`"checks":[{"context":"bumper/gates","app_id":%d}`, e.AppID())}}},
		{"acme/nolabel", []want{{"repo.label", doctorreport.Blocking, `no "agent:implement" label`, `gh label create "agent:implement" --repo acme/nolabel`}}},
	}
	for _, c := range cases {
		t.Run(c.repo, func(t *testing.T) {
			got := appdoctor.Check(ctx, cfg, c.repo, opts)
			for _, w := range c.want {
				find(t, got, w)
			}
			rep := doctorreport.NewReport(got)
			blocking := false
			for _, w := range c.want {
				blocking = blocking || w.status == doctorreport.Blocking
			}
			if rep.OK == blocking {
				t.Errorf("report ok=%v with %d blocking findings", rep.OK, rep.Blocking)
			}
		})
	}

	// Protection changed at run time (an admin in the branch settings) is seen at once.
	t.Run("protection removed", func(t *testing.T) {
		if err := e.RemoveBranchProtection("acme", "good", "main"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := e.SetBranchProtection("acme", "good", pinned()); err != nil {
				t.Fatal(err)
			}
		}()
		find(t, appdoctor.Check(ctx, cfg, "acme/good", opts), want{"repo.protection", doctorreport.Warning, "main is not protected", "expected source: the bumper App"})
	})
	t.Run("pin removed", func(t *testing.T) {
		unpinned := pinned()
		unpinned.RequiredCheckApps = map[string]string{"bumper/gates": "bumper"}
		if err := e.SetBranchProtection("acme", "good", unpinned); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := e.SetBranchProtection("acme", "good", pinned()); err != nil {
				t.Fatal(err)
			}
		}()
		got := appdoctor.Check(ctx, cfg, "acme/good", opts)
		find(t, got, want{"repo.verdict_source", doctorreport.Warning, "from any source", fmt.Sprintf(`"checks":[{"context":"bumper/verdict","app_id":%d},{"context":"bumper/gates","app_id":%d}]`, e.AppID(), e.AppID())})
		// Warnings, as the other protection gaps: nothing blocks, --strict fails.
		if rep := doctorreport.NewReport(got); !rep.OK || rep.Warnings != 1 {
			t.Errorf("report ok=%v warnings=%d, want ok with 1 warning", rep.OK, rep.Warnings)
		}
	})
}

// TestApp checks an App whose permissions and events fall short, an installation that
// has not accepted what the App asks for, and credentials GitHub refuses.
func TestApp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	short := setup.PermissionMap()
	delete(short, "checks")
	delete(short, "administration")
	short["members"] = "read"
	var events []string
	for _, e := range setup.EventNames() {
		if e != "check_run" {
			events = append(events, e)
		}
	}
	old := setup.PermissionMap()
	delete(old, "actions")
	seed := &ghemu.Seed{
		App:           ghemu.SeedApp{Slug: "bumper", Permissions: short, Events: events},
		Organizations: []string{"acme"},
		Repositories:  []ghemu.SeedRepository{repoSeed(t, "good", nil)},
		Installations: []ghemu.SeedInstallation{{Account: "acme", Permissions: old}},
	}
	e := emutest.New(t, ghemu.Options{Seed: seed})
	cfg := config(t, e)
	got := appdoctor.Check(ctx, cfg, "acme/good", opts)
	for _, w := range []want{
		{"app.permissions", doctorreport.Blocking, "checks: write (has none", "Permissions & events"},
		{"app.permissions", doctorreport.Warning, "administration: read", "administration: read"},
		{"app.permissions", doctorreport.Warning, "members: read", "lower them"},
		{"app.permissions", doctorreport.Blocking, "not subscribed to check_run", "Subscribe to events"},
		{"repo.installation_permissions", doctorreport.Blocking, "actions: write (has none", "accepts the new permissions"},
	} {
		find(t, got, w)
	}

	t.Run("not installed anywhere", func(t *testing.T) {
		find(t, appdoctor.Check(ctx, cfg, "", opts), want{"app.installations", doctorreport.OK, "installed on 1 accounts", ""})
	})
	t.Run("wrong App ID", func(t *testing.T) {
		bad := cfg
		bad.GitHub.App.IntegrationID = 1
		got := appdoctor.Check(ctx, bad, "acme/good", opts)
		find(t, got, want{"app.identity", doctorreport.Blocking, "GitHub refuses the App's credentials", "integration_id"})
		if len(got) != 1 {
			t.Errorf("checks went on without credentials: %v", got)
		}
	})
}

// TestTemplateWorkflow: the template users copy passes doctor's workflow check, which
// compares it with the App's dispatch inputs (wire.DispatchInputs) and the permissions
// it must grant.
func TestTemplateWorkflow(t *testing.T) {
	got := appdoctor.CheckWorkflow("bumper-run.yml", []byte(template(t)))
	if len(got) != 1 || got[0].Status != doctorreport.OK {
		t.Errorf("the template fails doctor's check: %+v", got)
	}
}

func TestWorkflowShapes(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       want
	}{
		{"not yaml", "on: [", want{"repo.workflow", doctorreport.Blocking, "does not parse", "copy"}},
		{"push only", "on: push\npermissions:\n  id-token: write\n", want{"repo.workflow", doctorreport.Blocking, "no workflow_dispatch", "on: workflow_dispatch:"}},
		{"write-all", strings.Replace(template(t), "permissions:\n  id-token: write", "permissions: write-all", 1), want{"repo.workflow", doctorreport.Warning, "contents: write", "remove them"}},
		{"read-all", strings.Replace(template(t), "permissions:\n  id-token: write", "permissions: read-all", 1), want{"repo.workflow", doctorreport.Blocking, "id-token: write", "nothing else"}},
		{"required extra input", strings.Replace(template(t), "    inputs:\n", "    inputs:\n      extra:\n        required: true\n", 1), want{"repo.workflow", doctorreport.Blocking, "never sends: extra", "optional"}},
		{"hosted runner", strings.Replace(template(t), "runs-on: [self-hosted, bumper]", "runs-on: ubuntu-latest", 1), want{"repo.workflow", doctorreport.Warning, "[self-hosted, bumper]", "runs-on"}},
		{"no run-name", regexp.MustCompile(`(?m)^run-name:.*\n`).ReplaceAllString(template(t), ""), want{"repo.workflow", doctorreport.Warning, "run-name", wire.RunNameTemplate}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			find(t, appdoctor.CheckWorkflow("w.yml", []byte(c.yaml)), c.want)
		})
	}
}

// TestConversationFindings: settings of the conversation that cannot do what they ask.
func TestConversationFindings(t *testing.T) {
	parse := func(s string) repoconfig.Config {
		p, err := repoconfig.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	find(t, appdoctor.ConversationFindings("main", true, parse("version: 1\nbounds: {update_rounds: 0}\n")),
		want{"repo.conversation", doctorreport.Warning, "requires pull requests to be up to date", "set bounds.update_rounds"})
	find(t, appdoctor.ConversationFindings("main", false, parse("version: 1\nbounds: {review_rounds: 0}\nreviewer: {revise_on_findings: true}\n")),
		want{"repo.conversation", doctorreport.Warning, "the reviewer's findings start no round", "set bounds.review_rounds"})
	find(t, appdoctor.ConversationFindings("main", true, repoconfig.Default()),
		want{"repo.conversation", doctorreport.OK, "revise rounds: at most 3 per pull request; updates of a pull request when main moves: at most 2", ""})
}
