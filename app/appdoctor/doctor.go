// Package doctor is `bumper doctor`'s App part: with serve's configuration it checks
// the App's permissions and events against what Bumper needs (app/setup), and for a
// repository the installation, the runner workflow, .github/bumper.yml, the default
// branch's protection and the trigger label, each finding with its exact fix.
package appdoctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/bumperdev/bumper/internal/ghretry"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/setup"
	"github.com/bumperdev/bumper/internal/doctorreport"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// CheckVerdict is the reviewer's check run, which branch protection should require.
const CheckVerdict = "bumper/verdict"

// CheckGates is the output gates' check run (docs/gates.md): failing while a finding
// needs a person, so branch protection should require it from the App.
const CheckGates = "bumper/gates"

// gatesCheckID is the finding on whether branch protection requires CheckGates from the
// App.
const gatesCheckID = "repo.gates_check"

// verdictSourceID is the finding on whom branch protection accepts CheckVerdict from:
// required by name alone, anyone who can post a status or a check run of that name
// meets it, so it must be pinned to the App (GitHub's "expected source").
const verdictSourceID = "repo.verdict_source"

// Options are what the App's checks need from the runner side. The control plane may
// not import the runner's packages (internal/archtest), so `bumper doctor`, which links
// both, passes them.
type Options struct {
	// ClaudeCodeVersion is the Claude Code release the runner installs by default
	// (action/harness.DefaultClaudeCodeVersion): the fix for a repository without a
	// harness names it, so the file it gives works as written.
	ClaudeCodeVersion string
}

// Check checks the App that cfg names and, when repo ("owner/name") is set, that
// repository's set-up. It returns the findings in the order checked; a failure to
// reach GitHub is a finding too, never an error, so one report shows everything.
func Check(ctx context.Context, cfg app.Config, repo string, opts Options) []doctorreport.Finding {
	var out []doctorreport.Finding
	add := func(check string, st doctorreport.Status, detail, fix string) {
		out = append(out, doctorreport.Finding{Check: check, Status: st, Detail: detail, Fix: fix})
	}
	cc, err := githubapp.NewDefaultCachingClientCreator(cfg.GitHub, githubapp.WithTransport(ghretry.New(nil)))
	if err != nil {
		add("app.identity", doctorreport.Blocking, fmt.Sprintf("cannot make a GitHub client from the configuration: %v", err), "check github.* in serve's configuration")
		return out
	}
	ac, err := cc.NewAppClient()
	if err != nil {
		add("app.identity", doctorreport.Blocking, fmt.Sprintf("cannot authenticate as the App: %v", err), "set github.app.private_key or bumper.private_key_file to the App's PEM key")
		return out
	}
	a, _, err := ac.Apps.Get(ctx, "")
	if err != nil {
		add("app.identity", doctorreport.Blocking, fmt.Sprintf("GitHub refuses the App's credentials (App %d at %s): %v", cfg.GitHub.App.IntegrationID, cfg.GitHub.V3APIURL, err),
			"check github.app.integration_id against the App's settings page, and that the private key is a current one of that App (generate a new one there if not)")
		return out
	}
	add("app.identity", doctorreport.OK, fmt.Sprintf("authenticated as the App %q (ID %d, %s), owned by %s", a.GetName(), a.GetID(), a.GetSlug(), a.GetOwner().GetLogin()), "")
	settings := strings.TrimRight(a.GetHTMLURL(), "/")
	out = append(out, permissionFindings("app.permissions", permsOf(a.GetPermissions()), a.Events, settings)...)
	if repo == "" {
		insts, _, err := ac.Apps.ListInstallations(ctx, &gogithub.ListOptions{PerPage: 100})
		switch {
		case err != nil:
			add("app.installations", doctorreport.Warning, fmt.Sprintf("cannot list the App's installations: %v", err), "try again; pass --repo to check one repository")
		case len(insts) == 0:
			add("app.installations", doctorreport.Blocking, "the App is installed nowhere, so no repository can use it", "install it: "+settings+"/installations/new")
		default:
			add("app.installations", doctorreport.OK, fmt.Sprintf("installed on %d accounts; pass --repo OWNER/REPO to check a repository", len(insts)), "")
		}
		return out
	}
	return append(out, checkRepo(ctx, cc, ac, cfg, opts, repo, a.GetSlug(), a.GetID(), settings)...)
}

// permissionFindings compares granted permissions (and events, when not nil) with
// Bumper's needs. Without administration: read serve only cannot check branch
// protection, so that gap is a warning; every other missing one blocks.
func permissionFindings(check string, perms map[string]string, events []string, settings string) []doctorreport.Finding {
	g := setup.Compare(perms, events)
	var out []doctorreport.Finding
	var blocking, warn []string
	for _, p := range g.MissingPermissions {
		have := g.Granted[p.Name]
		if have == "" {
			have = "none"
		}
		s := fmt.Sprintf("%s: %s (has %s; needed for: %s)", p.Name, p.Access, have, p.Why)
		if p.Name == "administration" {
			warn = append(warn, s)
		} else {
			blocking = append(blocking, s)
		}
	}
	fix := "in the App's settings (" + settings + ", Permissions & events) give it "
	if check == "repo.installation_permissions" {
		fix = "the App asks for more than this installation accepted: an owner of the account accepts the new permissions in its installation settings (Settings → GitHub Apps → Configure), or the App's settings give it "
	}
	if len(blocking) > 0 {
		out = append(out, doctorreport.Finding{Check: check, Status: doctorreport.Blocking, Detail: "missing " + strings.Join(blocking, "; "), Fix: fix + "exactly what `bumper setup` lists"})
	}
	if len(warn) > 0 {
		out = append(out, doctorreport.Finding{Check: check, Status: doctorreport.Warning, Detail: "missing " + strings.Join(warn, "; ") + ": serve cannot tell whether a merge needs a person's review", Fix: fix + "administration: read"})
	}
	if len(g.ExtraPermissions) > 0 {
		var extra []string
		for _, k := range sortedKeys(g.ExtraPermissions) {
			extra = append(extra, k+": "+g.ExtraPermissions[k])
		}
		out = append(out, doctorreport.Finding{Check: check, Status: doctorreport.Warning, Detail: "more than Bumper needs: " + strings.Join(extra, ", "),
			Fix: "lower them in the App's settings (" + settings + "): a leaked key should do as little as possible"})
	}
	if len(g.MissingEvents) > 0 {
		var names []string
		for _, e := range g.MissingEvents {
			names = append(names, e.Name+" ("+e.Why+")")
		}
		out = append(out, doctorreport.Finding{Check: check, Status: doctorreport.Blocking, Detail: "not subscribed to " + strings.Join(names, "; "),
			Fix: "subscribe to them in the App's settings (" + settings + ", Permissions & events, Subscribe to events)"})
	}
	if len(g.ExtraEvents) > 0 {
		out = append(out, doctorreport.Finding{Check: check, Status: doctorreport.Warning, Detail: "subscribed to events Bumper ignores: " + strings.Join(g.ExtraEvents, ", "),
			Fix: "unsubscribe from them in the App's settings (" + settings + "): serve would receive and drop them"})
	}
	if len(out) == 0 {
		what := "the permissions"
		if events != nil {
			what += " and events"
		}
		out = append(out, doctorreport.Finding{Check: check, Status: doctorreport.OK, Detail: what + " are exactly what Bumper needs"})
	}
	return out
}

func checkRepo(ctx context.Context, cc githubapp.ClientCreator, ac *gogithub.Client, cfg app.Config, opts Options, repo, slug string, appID int64, settings string) []doctorreport.Finding {
	var out []doctorreport.Finding
	add := func(check string, st doctorreport.Status, detail, fix string) {
		out = append(out, doctorreport.Finding{Check: check, Status: st, Detail: detail, Fix: fix})
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		add("repo.installation", doctorreport.Blocking, fmt.Sprintf("%q is not OWNER/REPO", repo), "pass --repo OWNER/REPO")
		return out
	}
	inst, _, err := ac.Apps.FindRepositoryInstallation(ctx, owner, name)
	if err != nil {
		fix := "install the App on it: " + settings + "/installations/new (or add the repository to the installation's selected repositories)"
		add("repo.installation", doctorreport.Blocking, fmt.Sprintf("the App is not installed on %s (%v)", repo, statusText(err)), fix)
		return out
	}
	add("repo.installation", doctorreport.OK, fmt.Sprintf("installed on %s (installation %d)", repo, inst.GetID()), "")
	out = append(out, permissionFindings("repo.installation_permissions", permsOf(inst.GetPermissions()), nil, settings)...)
	gh, err := cc.NewInstallationClient(inst.GetID())
	if err != nil {
		add("repo.access", doctorreport.Blocking, fmt.Sprintf("cannot make the installation's client: %v", err), "check the App's key")
		return out
	}
	r, _, err := gh.Repositories.Get(ctx, owner, name)
	if err != nil {
		add("repo.access", doctorreport.Blocking, fmt.Sprintf("the installation cannot read %s: %v", repo, statusText(err)), "check the installation's repository access")
		return out
	}
	branch := r.GetDefaultBranch()

	// The runner workflow, as the App dispatches it: at the default branch.
	wfPath := ".github/workflows/" + cfg.Bumper.Workflow
	raw, err := file(ctx, gh, owner, name, wfPath, branch)
	switch {
	case isStatus(err, http.StatusNotFound):
		add("repo.workflow", doctorreport.Blocking, fmt.Sprintf("%s is not on %s's %s branch, so the App has nothing to dispatch", wfPath, repo, branch),
			fmt.Sprintf("copy .github/workflows/bumper-run.yml from Bumper's source to %s on %s (bumper.workflow in serve's configuration names another file)", wfPath, branch))
	case err != nil:
		add("repo.workflow", doctorreport.Blocking, fmt.Sprintf("cannot read %s: %v", wfPath, statusText(err)), "check the App's contents: read permission")
	default:
		out = append(out, CheckWorkflow(wfPath, raw)...)
	}

	// The repository's policy, as the App reads it at the base commit.
	pol := repoconfig.Default()
	raw, err = file(ctx, gh, owner, name, repoconfig.Path, branch)
	switch {
	case isStatus(err, http.StatusNotFound):
		// The App would start work items with the defaults, but the runner refuses every
		// run that names no harness (action/harness.New): each would fail at its start.
		add("repo.config", doctorreport.Blocking, fmt.Sprintf("no %s on %s, so it names no harness and the runner refuses every run", repoconfig.Path, branch),
			harnessFix(opts, branch))
	case err != nil:
		add("repo.config", doctorreport.Blocking, fmt.Sprintf("cannot read %s: %v", repoconfig.Path, statusText(err)), "check the App's contents: read permission")
	default:
		switch p, err := repoconfig.Parse(raw); {
		case err != nil:
			add("repo.config", doctorreport.Blocking, fmt.Sprintf("%s on %s is invalid, so every work item stops at its start: %v", repoconfig.Path, branch, err),
				fmt.Sprintf("fix %s as the error says (docs/usage.md lists every key); an editor checks the file as you type against its JSON Schema, %s, when its first line is `%s`",
					repoconfig.Path, repoconfig.SchemaURL, repoconfig.SchemaModeline))
		case p.Harness.Name == "":
			pol = p
			add("repo.config", doctorreport.Blocking, fmt.Sprintf("%s on %s names no harness, so the runner refuses every run", repoconfig.Path, branch),
				harnessFix(opts, branch))
		default:
			pol = p
			add("repo.config", doctorreport.OK, fmt.Sprintf("%s on %s is valid and runs the %s harness", repoconfig.Path, branch, p.Harness.Name), "")
		}
	}

	out = append(out, protectionFindings(ctx, gh, owner, name, branch, slug, appID, pol)...)
	strict := false
	if b, _, err := gh.Repositories.GetBranch(ctx, owner, name, branch, 0); err == nil {
		rsc := b.GetProtection().GetRequiredStatusChecks()
		strict = rsc != nil && rsc.Strict
	}
	out = append(out, ConversationFindings(branch, strict, pol)...)

	label := cfg.Bumper.TriggerLabel
	if _, _, err := gh.Issues.GetLabel(ctx, owner, name, label); err != nil {
		if isStatus(err, http.StatusNotFound) {
			add("repo.label", doctorreport.Blocking, fmt.Sprintf("%s has no %q label, so nobody can ask for work", repo, label),
				fmt.Sprintf("create it: gh label create %q --repo %s --description \"Ask Bumper to implement this issue\"", label, repo))
		} else {
			add("repo.label", doctorreport.Warning, fmt.Sprintf("cannot read the %q label: %v", label, statusText(err)), "check the App's issues: read permission")
		}
	} else {
		add("repo.label", doctorreport.OK, fmt.Sprintf("the %q label exists", label), "")
	}
	return out
}

// protectionFindings checks that the default branch stops an unreviewed merge: a
// required approving review the App cannot bypass and, with the reviewer on, the
// verdict check pinned to the App (appID). Bumper never merges and runs go ahead
// without it (serve says so on the issue), so the gaps are warnings.
func protectionFindings(ctx context.Context, gh *gogithub.Client, owner, name, branch, slug string, appID int64, pol repoconfig.Config) []doctorreport.Finding {
	const id = "repo.protection"
	settings := fmt.Sprintf("Settings → Branches → %s", branch)
	p, _, err := gh.Repositories.GetBranchProtection(ctx, owner, name, branch)
	switch {
	case errors.Is(err, gogithub.ErrBranchNotProtected) || isStatus(err, http.StatusNotFound):
		return []doctorreport.Finding{{Check: id, Status: doctorreport.Warning,
			Detail: fmt.Sprintf("%s is not protected: nothing stops a merge of Bumper's pull request without a person's review", branch),
			Fix:    fmt.Sprintf("protect it (%s): require a pull request with at least 1 approving review%s, with no bypass for the App", settings, verdictWord(pol)+pinWord(pol, slug))}}
	case isStatus(err, http.StatusForbidden):
		return []doctorreport.Finding{{Check: id, Status: doctorreport.Warning,
			Detail: fmt.Sprintf("the App cannot read %s's protection (no administration: read)", branch),
			Fix:    "give the App administration: read (see the permissions finding)"}}
	case err != nil:
		return []doctorreport.Finding{{Check: id, Status: doctorreport.Warning, Detail: fmt.Sprintf("cannot read %s's protection: %v", branch, statusText(err)), Fix: "try again"}}
	}
	var out []doctorreport.Finding
	add := func(detail, fix string) {
		out = append(out, doctorreport.Finding{Check: id, Status: doctorreport.Warning, Detail: detail, Fix: fix})
	}
	rv := p.GetRequiredPullRequestReviews()
	if rv == nil || rv.RequiredApprovingReviewCount < 1 {
		add(fmt.Sprintf("%s's protection does not require an approving review", branch),
			fmt.Sprintf("%s: require a pull request before merging, with at least 1 approving review", settings))
	}
	if rv != nil && rv.GetBypassPullRequestAllowances() != nil {
		if slices.ContainsFunc(rv.GetBypassPullRequestAllowances().Apps, func(a *gogithub.App) bool { return strings.EqualFold(a.GetSlug(), slug) }) {
			add(fmt.Sprintf("%s's protection lets the %s App bypass its pull request rules", branch, slug),
				fmt.Sprintf("%s: remove %s from \"Allow specified actors to bypass required pull requests\"", settings, slug))
		}
	}
	var source *doctorreport.Finding
	if pol.ReviewerOn() {
		rsc := p.GetRequiredStatusChecks()
		switch required, pin := requiredPin(rsc, CheckVerdict); {
		case !required:
			add(fmt.Sprintf("%s's protection does not require the %s check, so a merge does not wait for the reviewer's verdict", branch, CheckVerdict),
				fmt.Sprintf("%s: require status checks to pass, add %s, and set its expected source to the %s App", settings, CheckVerdict, slug))
		case pin != appID:
			// A check required by name alone is met by any check run or commit status
			// of that name: a collaborator's POST /statuses, another App's check run,
			// CI code the agent wrote. Only the App's own verdict may stand.
			from := "any source: a commit status any collaborator can post, or any App's check run of that name, satisfies it"
			if pin != 0 {
				from = fmt.Sprintf("the App with ID %d, not %s (ID %d): that App's check run of that name satisfies it", pin, slug, appID)
			}
			source = &doctorreport.Finding{Check: verdictSourceID, Status: doctorreport.Warning,
				Detail: fmt.Sprintf("%s's protection requires %s from %s, not the reviewer's verdict alone", branch, CheckVerdict, from),
				Fix: fmt.Sprintf("%s → Require status checks to pass → %s → expected source: the %s App; or by the API (it replaces the list, so the other required checks are repeated): %s",
					settings, CheckVerdict, slug, pinCommand(owner, name, branch, rsc, appID, CheckVerdict))}
		default:
			source = &doctorreport.Finding{Check: verdictSourceID, Status: doctorreport.OK,
				Detail: fmt.Sprintf("%s is required from the %s App (ID %d) only", CheckVerdict, slug, appID)}
		}
	}
	if len(out) == 0 {
		out = append(out, doctorreport.Finding{Check: id, Status: doctorreport.OK,
			Detail: fmt.Sprintf("%s requires an approving review the App cannot bypass%s", branch, verdictWord(pol))})
	}
	if source != nil {
		out = append(out, *source)
	}
	return append(out, gatesFinding(owner, name, branch, slug, appID, p.GetRequiredStatusChecks()))
}

// gatesFinding checks that the branch requires bumper/gates from the App: the check
// fails while the output gates found something only a person should pass (a changed
// workflow, a new install hook, a dependency with an advisory), and without it being
// required a merge does not wait for the approving review that clears it.
func gatesFinding(owner, name, branch, slug string, appID int64, rsc *gogithub.RequiredStatusChecks) doctorreport.Finding {
	settings := fmt.Sprintf("Settings → Branches → %s", branch)
	fix := fmt.Sprintf("%s → Require status checks to pass → add %s, expected source: the %s App; or by the API (it replaces the list, so the other required checks are repeated): %s",
		settings, CheckGates, slug, pinCommand(owner, name, branch, rsc, appID, CheckGates))
	switch required, pin := requiredPin(rsc, CheckGates); {
	case !required:
		return doctorreport.Finding{Check: gatesCheckID, Status: doctorreport.Warning, Fix: fix,
			Detail: fmt.Sprintf("%s's protection does not require the %s check, so a pull request whose output gates left findings for a person can be merged without the approving review that clears them", branch, CheckGates)}
	case pin != appID:
		return doctorreport.Finding{Check: gatesCheckID, Status: doctorreport.Warning, Fix: fix,
			Detail: fmt.Sprintf("%s's protection requires %s from a source other than the %s App (ID %d): a commit status or another App's check run of that name satisfies it", branch, CheckGates, slug, appID)}
	}
	return doctorreport.Finding{Check: gatesCheckID, Status: doctorreport.OK,
		Detail: fmt.Sprintf("%s is required from the %s App (ID %d) only", CheckGates, slug, appID)}
}

// ConversationFindings checks that the conversation on Bumper's pull requests can do
// what the repository's settings ask of it: a base branch that requires up-to-date
// branches with updates turned off leaves every behind pull request to a person, and
// reviewer.revise_on_findings with revise rounds off does nothing. strict is whether
// branch's protection requires up-to-date branches.
func ConversationFindings(branch string, strict bool, pol repoconfig.Config) []doctorreport.Finding {
	const id = "repo.conversation"
	var out []doctorreport.Finding
	if strict && pol.Bounds.UpdateRounds == 0 {
		out = append(out, doctorreport.Finding{Check: id, Status: doctorreport.Warning,
			Detail: fmt.Sprintf("%s requires pull requests to be up to date before a merge, but bounds.update_rounds is 0 in %s: Bumper updates none of its pull requests, so each waits for a person to update it", branch, repoconfig.Path),
			Fix:    fmt.Sprintf("set bounds.update_rounds (1 to %d) in %s, or let people press Update branch", repoconfig.MaxUpdateRounds, repoconfig.Path)})
	}
	if pol.Reviewer.ReviseOnFindings && pol.Bounds.ReviewRounds == 0 {
		out = append(out, doctorreport.Finding{Check: id, Status: doctorreport.Warning,
			Detail: fmt.Sprintf("reviewer.revise_on_findings is on, but bounds.review_rounds is 0 in %s: the reviewer's findings start no round", repoconfig.Path),
			Fix:    fmt.Sprintf("set bounds.review_rounds (1 to %d), or turn revise_on_findings off", repoconfig.MaxReviewRounds)})
	}
	if len(out) == 0 {
		what := "off"
		if pol.Bounds.ReviewRounds > 0 {
			what = fmt.Sprintf("at most %d per pull request", pol.Bounds.ReviewRounds)
		}
		out = append(out, doctorreport.Finding{Check: id, Status: doctorreport.OK,
			Detail: fmt.Sprintf("revise rounds: %s; updates of a pull request when %s moves: at most %d", what, branch, pol.Bounds.UpdateRounds)})
	}
	return out
}

// harnessFix is the fix for a repository whose .github/bumper.yml names no harness: the
// smallest file that runs, and the model key the runner hosts then need.
func harnessFix(opts Options, branch string) string {
	version := opts.ClaudeCodeVersion
	if version == "" {
		version = "X.Y.Z"
	}
	return fmt.Sprintf("commit %s to %s with at least `version: 1` and `harness: {name: claude-code, version: %s}` "+
		"(or codex, or your own command: docs/usage.md), and give the runner workflow the model's key: "+
		"the Actions secret ANTHROPIC_API_KEY (OPENAI_API_KEY for codex; none for command), docs/action.md, \"The runner workflow\"",
		repoconfig.Path, branch, version)
}

// requiredPin reports whether required checks name check and the ID of the App it is
// pinned to, 0 when any source will do. GitHub lists every required check in checks
// with its app_id (null: any source); contexts, the older form, names them without a
// source, so a name found only there is unpinned.
func requiredPin(rsc *gogithub.RequiredStatusChecks, check string) (bool, int64) {
	if rsc == nil {
		return false, 0
	}
	for _, c := range rsc.GetChecks() {
		if c.Context == check {
			if c.AppID == nil || *c.AppID < 0 {
				return true, 0
			}
			return true, *c.AppID
		}
	}
	return slices.Contains(rsc.GetContexts(), check), 0
}

// pinCommand is the gh call that requires check from the App. The PATCH replaces the
// whole list, so it repeats the other required checks with their sources (-1: any, as
// an omitted app_id would let GitHub pick the App that last posted the check).
func pinCommand(owner, name, branch string, rsc *gogithub.RequiredStatusChecks, appID int64, check string) string {
	checks := []string{fmt.Sprintf(`{"context":%q,"app_id":%d}`, check, appID)}
	seen := map[string]bool{check: true}
	for _, c := range rsc.GetChecks() {
		if seen[c.Context] {
			continue
		}
		seen[c.Context] = true
		id := int64(-1)
		if c.AppID != nil {
			id = *c.AppID
		}
		checks = append(checks, fmt.Sprintf(`{"context":%q,"app_id":%d}`, c.Context, id))
	}
	for _, c := range rsc.GetContexts() {
		if !seen[c] {
			seen[c] = true
			checks = append(checks, fmt.Sprintf(`{"context":%q,"app_id":-1}`, c))
		}
	}
	return fmt.Sprintf(`echo '{"checks":[%s]}' | gh api -X PATCH repos/%s/%s/branches/%s/protection/required_status_checks --input -`,
		strings.Join(checks, ","), owner, name, branch)
}

// pinWord asks for the verdict check's expected source when the reviewer is on.
func pinWord(pol repoconfig.Config, slug string) string {
	if !pol.ReviewerOn() {
		return ""
	}
	return " (expected source: the " + slug + " App)"
}

func verdictWord(pol repoconfig.Config) string {
	if !pol.ReviewerOn() {
		return ""
	}
	return " and the " + CheckVerdict + " check"
}

func file(ctx context.Context, gh *gogithub.Client, owner, name, path, ref string) ([]byte, error) {
	fc, _, _, err := gh.Repositories.GetContents(ctx, owner, name, path, &gogithub.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, err
	}
	if fc == nil {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("failed to decode %s: %w", path, err)
	}
	return []byte(s), nil
}

func isStatus(err error, code int) bool {
	var er *gogithub.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

// statusText shortens go-github's errors to the status and GitHub's message.
func statusText(err error) string {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return fmt.Sprintf("%d %s", er.Response.StatusCode, er.Message)
	}
	return err.Error()
}

// permsOf is go-github's permissions struct as GitHub's {name: access} map.
func permsOf(p *gogithub.InstallationPermissions) map[string]string {
	out := map[string]string{}
	raw, err := json.Marshal(p)
	if err != nil {
		return out
	}
	_ = json.Unmarshal(raw, &out)
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
