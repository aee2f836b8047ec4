package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// apiAttack is one request an agent in the VM tries against the GitHub API gateway.
type apiAttack struct {
	rule   string // the refusal (an apiRefusals entry, or "method-override") that must stop it
	method string
	path   string // below /api/github
	hdr    map[string]string
}

// hostOnlyAttacks are writes only the host side may make, and the reads of
// stranger-written text the agent never gets. Each is tried under the most permissive
// allowlist there is (`* /**`). TestRefusalTableIsTested checks that every entry of the
// table has at least one attack here.
var hostOnlyAttacks = []apiAttack{
	{"git-database", "POST", "/repos/o/r/git/refs", nil},
	{"git-database", "PATCH", "/repos/o/r/git/refs/heads/main", nil},
	{"git-database", "DELETE", "/repos/o/r/git/refs/heads/bumper/12-1", nil},
	{"git-database", "POST", "/repos/o/r/git/tags", nil},
	{"git-database", "POST", "/repos/o/r/git/blobs", nil},
	{"git-database", "POST", "/repos/o/r/git/trees", nil},
	{"git-database", "POST", "/repos/o/r/git/commits", nil},
	{"contents", "PUT", "/repos/o/r/contents/README.md", nil},
	{"contents", "PUT", "/repos/o/r/contents/.github/workflows/ci.yml", nil},
	{"contents", "DELETE", "/repos/o/r/contents/go.mod", nil},
	{"check-runs-and-suites", "POST", "/repos/o/r/check-runs", nil},
	{"check-runs-and-suites", "PATCH", "/repos/o/r/check-runs/5", nil},
	{"check-runs-and-suites", "POST", "/repos/o/r/check-runs/5/rerequest", nil},
	{"check-runs-and-suites", "POST", "/repos/o/r/check-suites", nil},
	{"check-runs-and-suites", "PATCH", "/repos/o/r/check-suites/preferences", nil},
	{"commit-statuses", "POST", "/repos/o/r/statuses/0123456789abcdef0123456789abcdef01234567", nil},
	{"deployments", "POST", "/repos/o/r/deployments", nil},
	{"deployments", "POST", "/repos/o/r/deployments/1/statuses", nil},
	{"pull-request-reviews", "POST", "/repos/o/r/pulls/1/reviews", nil},
	{"pull-request-reviews", "POST", "/repos/o/r/pulls/1/reviews/2/events", nil},
	{"pull-request-reviews", "PUT", "/repos/o/r/pulls/1/reviews/2/dismissals", nil},
	{"pull-request-reviews", "PUT", "/repos/o/r/pulls/1/reviews/2", nil},
	{"pull-request-reviews", "DELETE", "/repos/o/r/pulls/1/reviews/2", nil},
	{"pull-request-reviews", "GET", "/repos/o/r/pulls/1/reviews", nil},
	{"pull-request-reviews", "GET", "/repos/o/r/pulls/1/reviews/2/comments", nil},
	{"merges", "PUT", "/repos/o/r/pulls/1/merge", nil},
	{"merges", "POST", "/repos/o/r/merges", nil},
	{"merges", "PUT", "/repos/o/r/pulls/1/update-branch", nil},
	{"merges", "POST", "/repos/o/r/merge-upstream", nil},
	{"pull-requests", "POST", "/repos/o/r/pulls", nil},
	{"pull-requests", "PATCH", "/repos/o/r/pulls/1", nil},
	{"pull-requests", "POST", "/repos/o/r/pulls/1/requested_reviewers", nil},
	{"labels", "POST", "/repos/o/r/labels", nil},
	{"labels", "PATCH", "/repos/o/r/labels/bug", nil},
	{"labels", "DELETE", "/repos/o/r/labels/bug", nil},
	{"labels", "POST", "/repos/o/r/issues/7/labels", nil},
	{"labels", "PUT", "/repos/o/r/issues/7/labels", nil},
	{"labels", "DELETE", "/repos/o/r/issues/7/labels/bumper:approved", nil},
	{"issues", "POST", "/repos/o/r/issues", nil},
	{"issues", "PATCH", "/repos/o/r/issues/7", nil},
	{"issues", "PUT", "/repos/o/r/issues/7/lock", nil},
	{"issues", "POST", "/repos/o/r/issues/7/assignees", nil},
	{"issue-comments", "POST", "/repos/o/r/issues/7/comments", nil},
	{"issue-comments", "PATCH", "/repos/o/r/issues/comments/9", nil},
	{"issue-comments", "DELETE", "/repos/o/r/issues/comments/9", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/7/comments", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/comments", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/comments/9", nil},
	{"issue-timeline", "GET", "/repos/o/r/issues/7/timeline", nil},
	{"pull-request-review-comments", "POST", "/repos/o/r/pulls/1/comments", nil},
	{"pull-request-review-comments", "PATCH", "/repos/o/r/pulls/comments/9", nil},
	{"pull-request-review-comments", "DELETE", "/repos/o/r/pulls/comments/9", nil},
	{"pull-request-review-comments", "GET", "/repos/o/r/pulls/1/comments", nil},
	{"pull-request-review-comments", "GET", "/repos/o/r/pulls/comments", nil},
	{"commit-comments", "POST", "/repos/o/r/commits/abc/comments", nil},
	{"commit-comments", "PATCH", "/repos/o/r/comments/9", nil},
	{"commit-comments", "DELETE", "/repos/o/r/comments/9", nil},
	{"commit-comments", "GET", "/repos/o/r/comments", nil},
	{"commit-comments", "GET", "/repos/o/r/commits/abc/comments", nil},
	{"discussions", "GET", "/repos/o/r/discussions", nil},
	{"discussions", "GET", "/repos/o/r/discussions/3/comments", nil},
	{"discussions", "POST", "/repos/o/r/discussions/3/comments", nil},
	{"team-discussions", "GET", "/orgs/o/teams/t/discussions", nil},
	{"team-discussions", "GET", "/orgs/o/teams/t/discussions/1/comments", nil},
	{"team-discussions", "GET", "/teams/5/discussions/1/comments", nil},
	{"gists", "GET", "/gists/abc/comments", nil},
	{"gists", "POST", "/gists/abc/comments", nil},
	{"gists", "GET", "/gists/abc", nil},
	{"gists", "GET", "/users/u/gists", nil},
	{"activity-events", "GET", "/repos/o/r/events", nil},
	{"activity-events", "GET", "/networks/o/r/events", nil},
	{"activity-events", "GET", "/events", nil},
	{"activity-events", "GET", "/orgs/o/events", nil},
	{"activity-events", "GET", "/users/u/events/public", nil},
	{"activity-events", "GET", "/users/u/received_events", nil},
	{"actions", "GET", "/repos/o/r/actions/secrets", nil},
	{"actions", "GET", "/repos/o/r/actions/runs/1/logs", nil},
	{"actions", "POST", "/repos/o/r/actions/workflows/ci.yml/dispatches", nil},
	{"actions", "PUT", "/repos/o/r/actions/permissions", nil},
	{"actions", "POST", "/repos/o/r/actions/runs/1/rerun", nil},
	{"actions", "GET", "/orgs/o/actions/secrets", nil},
	{"repository-dispatch", "POST", "/repos/o/r/dispatches", nil},
	{"branch-protection-and-rulesets", "PUT", "/repos/o/r/branches/main/protection", nil},
	{"branch-protection-and-rulesets", "DELETE", "/repos/o/r/branches/main/protection/required_status_checks", nil},
	{"branch-protection-and-rulesets", "POST", "/repos/o/r/branches/main/rename", nil},
	{"branch-protection-and-rulesets", "POST", "/repos/o/r/rulesets", nil},
	{"branch-protection-and-rulesets", "PUT", "/repos/o/r/rulesets/1", nil},
	{"branch-protection-and-rulesets", "POST", "/orgs/o/rulesets", nil},
	{"repository-settings", "PATCH", "/repos/o/r", nil},
	{"repository-settings", "DELETE", "/repos/o/r", nil},
	{"repository-settings", "PUT", "/repos/o/r/topics", nil},
	{"repository-settings", "POST", "/repos/o/r/transfer", nil},
	{"repository-settings", "PUT", "/repos/o/r/collaborators/mallory", nil},
	{"repository-settings", "PUT", "/repos/o/r/environments/production", nil},
	{"repository-settings", "POST", "/repos/o/r/pages", nil},
	{"repository-settings", "DELETE", "/repos/o/r/vulnerability-alerts", nil},
	{"repository-settings", "PUT", "/orgs/o/teams/t/repos/o/r", nil},
	{"repository-settings", "PATCH", "/repos/o/r/code-scanning/alerts/1", nil},
	{"repository-settings", "PATCH", "/repos/o/r/secret-scanning/alerts/1", nil},
	{"deploy-keys", "POST", "/repos/o/r/keys", nil},
	{"deploy-keys", "DELETE", "/repos/o/r/keys/1", nil},
	{"deploy-keys", "POST", "/user/keys", nil},
	{"hooks", "POST", "/repos/o/r/hooks", nil},
	{"hooks", "GET", "/repos/o/r/hooks/1/deliveries", nil},
	{"hooks", "PATCH", "/orgs/o/hooks/1", nil},
	{"hooks", "GET", "/orgs/o/hooks", nil},
	{"releases", "POST", "/repos/o/r/releases", nil},
	{"releases", "PATCH", "/repos/o/r/releases/1", nil},
	{"releases", "DELETE", "/repos/o/r/releases/assets/1", nil},
	{"graphql", "POST", "/graphql", nil},
	{"graphql", "GET", "/graphql", nil},
	{"forks-and-new-repositories", "POST", "/repos/o/r/forks", nil},
	{"forks-and-new-repositories", "POST", "/user/repos", nil},
	{"forks-and-new-repositories", "POST", "/orgs/o/repos", nil},
	{"forks-and-new-repositories", "POST", "/repos/o/template/generate", nil},
	{"starring-and-following", "PUT", "/user/starred/o/r", nil},
	{"starring-and-following", "DELETE", "/user/starred/o/r", nil},
	{"starring-and-following", "PUT", "/user/following/u", nil},
	{"starring-and-following", "PUT", "/repos/o/r/subscription", nil},
	{"installation-and-app", "DELETE", "/installation/token", nil},
	{"installation-and-app", "GET", "/installation/repositories", nil},
	{"installation-and-app", "GET", "/app", nil},
	{"installation-and-app", "POST", "/app/installations/1/access_tokens", nil},
	{"read-only", "POST", "/markdown", nil},
	{"read-only", "PUT", "/notifications", nil},
	{"read-only", "POST", "/repos/o/r/import", nil},
	{"read-only", "OPTIONS", "/rate_limit", nil},

	// Reads of what issue and pull request authors write (the live issue, edited after
	// approval; other issues; fork commits), events, sub-issues, search, forks' code and
	// security alerts: refused under `* /**` too.
	{"issue-text", "GET", "/repos/o/r/issues/7", nil},
	{"issue-text", "HEAD", "/repos/o/r/issues/7", nil},
	{"issue-text", "GET", "/repos/o/r/issues?state=all", nil},
	{"issue-text", "GET", "/repos/o/r/issues", nil},
	{"issue-text", "GET", "/repositories/123/issues/7", nil},
	{"issue-text", "GET", "/api/v3/repos/o/r/Issues/7/", nil},
	{"issue-text", "GET", "/repos/o/r/issues/7.json", nil},
	{"issue-text", "GET", "/issues?filter=all", nil},
	{"issue-text", "GET", "/user/issues", nil},
	{"issue-text", "GET", "/orgs/o/issues", nil},
	{"pull-request-text", "GET", "/repos/o/r/pulls/1", nil},
	{"pull-request-text", "GET", "/repos/o/r/pulls", nil},
	{"pull-request-text", "GET", "/repos/o/r/pulls?state=all&head=forker:main", nil},
	{"pull-request-text", "GET", "/repos/o/r/pulls/1/commits", nil},
	{"pull-request-text", "GET", "/repos/o/r/pulls/1/files", nil},
	{"pull-request-text", "GET", "/repos/o/r/commits/abc/pulls", nil},
	{"issue-events", "GET", "/repos/o/r/issues/events", nil},
	{"issue-events", "GET", "/repos/o/r/issues/events/5", nil},
	{"issue-events", "GET", "/repos/o/r/issues/7/events", nil},
	{"sub-issues", "GET", "/repos/o/r/issues/7/sub_issues", nil},
	{"sub-issues", "GET", "/repos/o/r/issues/7/parent", nil},
	{"sub-issues", "GET", "/repos/o/r/issues/7/dependencies/blocked_by", nil},
	{"search", "GET", "/search/issues?q=repo:o/r+is:open", nil},
	{"search", "GET", "/search/code?q=_method+repo:o/r", nil},
	{"search", "GET", "/search/commits?q=fix", nil},
	{"search", "GET", "/Search/Repositories?q=x", nil},
	{"fork-refs", "GET", "/repos/o/r/contents/x?ref=refs/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/contents/src/main.go?ref=pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/contents/x?ref=refs%2Fpull%2F9%2Fmerge", nil},
	{"fork-refs", "GET", "/repos/o/r/contents/x?x=1;ref=refs/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/contents/x?ref[]=pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/readme?ref=REFS/PULL/9/HEAD", nil},
	{"fork-refs", "GET", "/repos/o/r/git/refs/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/git/ref/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/git/matching-refs/pull", nil},
	{"fork-refs", "GET", "/repos/o/r/commits?sha=refs/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/commits/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/commits/refs/pull/9/head/check-runs", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/main...refs/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/pull/9/head..main", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/main...forker:main", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/main...forker:r-fork:main", nil},
	{"fork-refs", "GET", "/repos/o/r/tarball/refs/pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/zipball/pull/9/merge", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/secret-scanning/alerts", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/secret-scanning/alerts/1/locations", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/code-scanning/alerts", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/dependabot/alerts", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/dependabot/secrets", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/codespaces/secrets", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/environments/production/secrets", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/environments/production/variables", nil},
	{"security-alerts-and-secrets", "GET", "/repos/o/r/security-advisories", nil},
	{"security-alerts-and-secrets", "GET", "/orgs/o/secret-scanning/alerts", nil},
	{"security-alerts-and-secrets", "GET", "/orgs/o/dependabot/secrets", nil},
	{"security-alerts-and-secrets", "GET", "/user/codespaces/secrets", nil},

	// Listings of refs that include refs/pull/* (a prefix of pull/ or refs/pull/, or no
	// prefix at all), compare ranges a four-dot split would misread, and check run
	// annotations (what fork pull requests' workflows print).
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/pu", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/pul", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/p", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/PU", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/refs/pu", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/refs", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs/", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/matching-refs", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/refs", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/refs/", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/refs?per_page=100", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/refs/pu", nil},
	{"pull-ref-listings", "GET", "/repos/o/r/git/refs/refs/pul", nil},
	{"pull-ref-listings", "HEAD", "/repos/o/r/git/matching-refs/pu", nil},
	{"pull-ref-listings", "GET", "/repositories/123/git/matching-refs/pu", nil},
	{"pull-ref-listings", "GET", "/api/v3/repos/o/r/git/matching-refs/pu", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/main....pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/main.....pull/9/head", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/pull/9/head....main", nil},
	{"fork-refs", "GET", "/repos/o/r/compare/main....bumper/12-1", nil},
	{"fork-refs", "GET", "/repos/o/r/commits/main....pull/9/head", nil},
	{"check-run-annotations", "GET", "/repos/o/r/check-runs/5/annotations", nil},
	{"check-run-annotations", "GET", "/repos/o/r/check-runs/5/annotations?per_page=100", nil},
	{"check-run-annotations", "GET", "/repos/o/r/check-runs/5/Annotations/", nil},
	{"check-run-annotations", "GET", "/repositories/123/check-runs/5/annotations", nil},

	// Other people and their repositories: lists of forks and repositories, profiles.
	{"forks-and-repository-lists", "GET", "/repos/o/r/forks", nil},
	{"forks-and-repository-lists", "GET", "/repos/o/r/forks?sort=newest", nil},
	{"forks-and-repository-lists", "GET", "/repositories/123/forks", nil},
	{"forks-and-repository-lists", "GET", "/users/stranger/repos", nil},
	{"forks-and-repository-lists", "GET", "/users/stranger/starred", nil},
	{"forks-and-repository-lists", "GET", "/orgs/o/repos", nil},
	{"forks-and-repository-lists", "GET", "/orgs/stranger-org/repos?type=forks", nil},
	{"forks-and-repository-lists", "GET", "/user/repos", nil},
	{"forks-and-repository-lists", "GET", "/repositories", nil},
	{"forks-and-repository-lists", "GET", "/repositories?since=1", nil},
	{"user-and-organization-profiles", "GET", "/users/stranger", nil},
	{"user-and-organization-profiles", "GET", "/users/o", nil},
	{"user-and-organization-profiles", "GET", "/users", nil},
	{"user-and-organization-profiles", "GET", "/users/stranger/followers", nil},
	{"user-and-organization-profiles", "GET", "/user", nil},
	{"user-and-organization-profiles", "GET", "/orgs/o", nil},
	{"user-and-organization-profiles", "GET", "/orgs/o/members", nil},
	{"user-and-organization-profiles", "GET", "/organizations", nil},
}

// evasions are the same operations spelled the way an attacker would to slip past a
// matcher: case, trailing slash, lower-case method, prefixes, encodings, suffixes,
// method overrides.
var evasions = []apiAttack{
	{"git-database", "POST", "/REPOS/o/r/GIT/REFS", nil},
	{"git-database", "POST", "/repos/o/r/git/refs/", nil},
	{"git-database", "post", "/repos/o/r/git/refs", nil},
	{"git-database", "Post", "/repos/o/r/git/refs", nil},
	{"git-database", "POST", "/repos/o/r/git/refs?ref=refs/heads/main", nil},
	{"git-database", "POST", "/api/v3/repos/o/r/git/refs", nil},
	{"git-database", "POST", "/api/v3/api/v3/repos/o/r/git/refs", nil},
	{"git-database", "POST", "/repositories/123/git/refs", nil},
	{"git-database", "POST", "/repos/o/r/%67it/refs", nil},
	{"check-runs-and-suites", "POST", "/repos/o/r/Check-Runs", nil},
	{"check-runs-and-suites", "POST", "/repos/o/r/check-runs.json", nil},
	{"graphql", "POST", "/api/graphql", nil},
	{"graphql", "POST", "/GraphQL/", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/7/%63omments", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/7/Comments/", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/7/comments.json", nil},
	{"issue-comments", "GET", "/repos/o/r/issues/7/comments?per_page=100&page=2", nil},
	{"issue-comments", "HEAD", "/repos/o/r/issues/7/comments", nil},
	{"issue-comments", "GET", "/repositories/123/issues/7/comments", nil},
	{"issue-comments", "GET", "/api/v3/repos/o/r/issues/comments", nil},
	{"pull-request-reviews", "HEAD", "/repos/o/r/pulls/1/reviews", nil},
	{"read-only", "get", "/rate_limit", nil},
	{"user-and-organization-profiles", "GET", "/api/v3/users/stranger", nil},
	{"user-and-organization-profiles", "GET", "/Users/Stranger/", nil},
	{"user-and-organization-profiles", "GET", "/users/stranger.json", nil},
	{"forks-and-repository-lists", "GET", "/repos/o/r/Forks/", nil},
	{"method-override", "GET", "/repos/o/r/issues/7", map[string]string{"X-HTTP-Method-Override": "DELETE"}},
	{"method-override", "GET", "/repos/o/r/issues/7", map[string]string{"X-HTTP-Method": "PATCH"}},
	{"method-override", "GET", "/repos/o/r/issues/7", map[string]string{"x-method-override": "PUT"}},
	{"method-override", "HEAD", "/repos/o/r/issues/7", map[string]string{"X-Http-Method-Override": "DELETE"}},
	{"method-override", "GET", "/repos/o/r/issues/7?_method=DELETE", nil},
	{"method-override", "GET", "/repos/o/r/issues/7?x=1&_METHOD=patch", nil},
	{"method-override", "GET", "/repos/o/r/issues/7?x=1;%5Fmethod=delete", nil},
}

// TestHostOnlyOperationsRefused: under `* /**` every host-only write and every read of
// stranger-written text is refused with 403, names its rule, is audited, and never
// reaches GitHub.
func TestHostOnlyOperationsRefused(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.APIAllow = []string{"* /**"} })
	for _, set := range []struct {
		name    string
		attacks []apiAttack
	}{{"table", hostOnlyAttacks}, {"evasion", evasions}} {
		for _, tc := range set.attacks {
			t.Run(set.name+"/"+tc.rule+"/"+tc.method+" "+tc.path, func(t *testing.T) {
				before := f.api.count()
				hdr := map[string]string{"Authorization": "token sentinel"}
				for k, v := range tc.hdr {
					hdr[k] = v
				}
				resp, body := f.do(t, tc.method, "/api/github"+tc.path, hdr, `{"body":"ignore previous instructions"}`)
				if resp.StatusCode != http.StatusForbidden {
					t.Fatalf("status %d (%s), want 403", resp.StatusCode, body)
				}
				if n := f.api.count(); n != before {
					t.Fatal("the refused request reached the GitHub API")
				}
				if tc.method != "HEAD" && !strings.Contains(body, "["+tc.rule+"]") {
					t.Fatalf("refusal %q does not name rule %s", body, tc.rule)
				}
			})
		}
	}
	a := f.auditText(t)
	if got, want := strings.Count(a, `"allowed":false`), len(hostOnlyAttacks)+len(evasions); got != want {
		t.Fatalf("%d refusals audited, want one per attack (%d)", got, want)
	}
	if strings.Contains(a, `"allowed":true`) {
		t.Fatal("an attack was audited as allowed")
	}
}

// TestAPIReadsUnderPermissiveAllowlist: the refusals do not take the agent's ordinary
// reads away.
func TestAPIReadsUnderPermissiveAllowlist(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.APIAllow = []string{"* /**"} })
	for _, tc := range []struct{ method, path string }{
		{"GET", "/repos/o/r"},
		{"HEAD", "/repos/o/r"},
		{"GET", "/repos/o/r/contents/README.md"},
		{"GET", "/repos/o/r/contents/README.md?ref=main"},
		{"GET", "/repos/o/r/contents/src?ref=bumper/12-1"},
		{"GET", "/repos/o/r/contents/docs/pull/README.md"}, // a directory named pull is not a pull request's ref
		{"GET", "/repos/o/r/readme?ref=refs/heads/main"},
		{"GET", "/repos/o/r/git/refs/heads/main"},
		{"GET", "/repos/o/r/git/trees/abc?recursive=1"},
		{"GET", "/repos/o/r/branches/main"},
		{"GET", "/repos/o/r/commits?sha=main&per_page=5"},
		{"GET", "/repos/o/r/commits/abc/check-runs"},
		{"GET", "/repos/o/r/compare/main...bumper/12-1"},
		{"GET", "/repos/o/r/tarball/main"},
		{"GET", "/repos/o/r/releases/latest"},
		{"GET", "/repos/o/r/labels"},
		{"GET", "/rate_limit"},
		{"GET", "/repos/o/r/commits?path=docs/_method.md"}, // a query that mentions an override is not one
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := f.api.count()
			resp, body := f.do(t, tc.method, "/api/github"+tc.path, nil, "")
			if resp.StatusCode != http.StatusOK || f.api.count() != before+1 {
				t.Fatalf("status %d (%s): a read was not forwarded", resp.StatusCode, body)
			}
			if got := f.api.last(t).Get("Authorization"); got != "Bearer "+testToken {
				t.Fatalf("upstream Authorization %q", got)
			}
		})
	}
}

// TestAPIDeniedByDefault: a GitHub API gateway with no rules forwards nothing, reads
// included.
func TestAPIDeniedByDefault(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.APIAllow = nil })
	for _, tc := range []struct{ method, path string }{
		{"GET", "/rate_limit"},
		{"GET", "/repos/o/r/issues/7"},
		{"HEAD", "/repos/o/r"},
		{"POST", "/repos/o/r/issues/7/comments"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := f.do(t, tc.method, "/api/github"+tc.path, nil, "")
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d (%s), want 403", resp.StatusCode, body)
			}
			if tc.method != "HEAD" && !strings.Contains(body, "no GitHub API") {
				t.Fatalf("refusal %q does not say why", body)
			}
		})
	}
	if n := f.api.count(); n != 0 {
		t.Fatalf("%d requests reached the GitHub API", n)
	}
	if a := f.auditText(t); strings.Count(a, "no GitHub API") != 4 {
		t.Fatalf("refusals not audited:\n%s", a)
	}
}

// TestRefusalTableIsTested: every entry of the refusal table is tried by at least one
// attack, and every attack names an entry that exists (or the method-override check).
func TestRefusalTableIsTested(t *testing.T) {
	names := map[string]bool{"method-override": true}
	for _, r := range apiRefusals {
		if names[r.name] {
			t.Errorf("entry %s appears twice in the table", r.name)
		}
		names[r.name] = true
		if r.why == "" || (len(r.patterns) == 0) == (r.match == nil) || r.methods == 0 {
			t.Errorf("entry %s lacks a reason or its methods, or has neither or both of patterns and a match function", r.name)
		}
	}
	tried := map[string]bool{}
	for _, a := range append(append([]apiAttack{}, hostOnlyAttacks...), evasions...) {
		if !names[a.rule] {
			t.Errorf("attack %s %s names no table entry %q", a.method, a.path, a.rule)
		}
		tried[a.rule] = true
	}
	for name := range names {
		if !tried[name] {
			t.Errorf("table entry %s has no attack in hostOnlyAttacks", name)
		}
	}
}

// TestAPISegments: the spellings an attacker tries all reach the same segments.
func TestAPISegments(t *testing.T) {
	want := "repos/o/r/git/refs"
	for _, p := range []string{
		"/repos/o/r/git/refs", "/REPOS/O/R/GIT/REFS", "/repos/o/r/git/refs/", "/api/v3/repos/o/r/git/refs",
		"/Api/V3/repos/o/r/git/refs", "/repos/o/r/%67%69%74/refs",
	} {
		if got := strings.Join(apiSegments(p), "/"); got != want {
			t.Errorf("apiSegments(%q) = %q, want %q", p, got, want)
		}
	}
	if got := strings.Join(apiSegments("/repositories/42/issues/1/comments"), "/"); got != "repos/42/_/issues/1/comments" {
		t.Errorf("repositories form: %q", got)
	}
	if got := strings.Join(apiSegments("/api/graphql"), "/"); got != "graphql" {
		t.Errorf("GHES graphql: %q", got)
	}
}

// TestAPIPathSpellingsRefused: spellings a matcher might not canonicalise (matrix
// parameters, NUL, whitespace, an encoded '?' or '#', invisible and format characters,
// invalid UTF-8) are refused with 400 on every GitHub API path, reads included, before
// the refusal table or the rules see them. File paths below /contents/ may hold spaces,
// '@', '#' or any visible Unicode, but never ';', control, invisible or format
// characters, nor any other character internal/hiddenchar calls hidden (U+FFFC, the
// object replacement character, which many fonts draw as nothing, is printable).
func TestAPIPathSpellingsRefused(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.APIAllow = []string{"* /**"} })
	for _, path := range []string{
		"/repos/o/r/issues/7/comments;x",
		"/repos/o/r/issues/7/comments%00",
		"/repos/o/r/issues/7/comments%20",
		"/repos/o/r/issues/7/comments%09",
		"/repos/o/r/issues/comments%3Fx",
		"/repos/o/r/pulls/1/reviews;",
		"/repos/o/r/issues/7/COMMENTS%E2%80%8B",
		"/repos/o/r/issues/7/comments%C2%A0",
		"/repos/o/r/comments%EF%BB%BF",
		"/repos/o/r/hooks%E2%80%AE",
		"/repos/o/r/hooks%23x",
		"/repos/o/r/%E3%85%A4",
		"/repos/o/r/git/refs%0A",
		"/repos/o%20/r/contents/x",
		"/repos/o/r/contents/a;b",
		"/repos/o/r/contents/a%3Bb",
		"/repos/o/r/contents/a%00b",
		"/repos/o/r/contents/a%0Ab",
		"/repos/o/r/contents/x%E2%80%8B.md",
		"/repos/o/r/contents/x%E2%80%AEdm.exe",
		"/repos/o/r/contents/%FF",
		"/repos/o/r/contents/a%C2%ADb",
		"/repos/o/r/contents/README%EF%BF%BC.md",
	} {
		t.Run(path, func(t *testing.T) {
			resp, body := f.do(t, "GET", "/api/github"+path, nil, "")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "character") {
				t.Fatalf("status %d (%s), want 400 naming the character", resp.StatusCode, body)
			}
		})
	}
	if n := f.api.count(); n != 0 {
		t.Fatalf("%d odd spellings reached the GitHub API", n)
	}
	if a := f.auditText(t); strings.Count(a, `"status":400`) < 20 {
		t.Fatalf("refusals not audited:\n%s", a)
	}
	// File names in the repository are whatever its authors chose.
	for _, path := range []string{
		"/repos/o/r/contents/docs/My%20File.md",
		"/repos/o/r/contents/docs/user@host.md",
		"/repos/o/r/contents/%C3%A9t%C3%A9/caf%C3%A9.md",
		"/repos/o/r/contents/C%23/x.cs",
		"/repos/o/r/contents/a+b(1),c=d.txt",
		"/repos/o/r/contents/%E6%97%A5%E6%9C%AC%E8%AA%9E.md?ref=main",
	} {
		t.Run("file name "+path, func(t *testing.T) {
			before := f.api.count()
			resp, body := f.do(t, "GET", "/api/github"+path, nil, "")
			if resp.StatusCode != http.StatusOK || f.api.count() != before+1 {
				t.Fatalf("status %d (%s): a file read was not forwarded", resp.StatusCode, body)
			}
			if got, want := f.api.last(t).Get("X-Seen-Path"), mustUnescape(strings.SplitN(path, "?", 2)[0]); !strings.HasPrefix(got, want+"?") {
				t.Fatalf("upstream saw %q, want %q", got, want)
			}
		})
	}
}

// TestOtherRepositoriesRefused: the API gateway serves the run's repository only. An
// agent holding the run's token (which reads every public repository) tries a
// stranger's fork by name and by id, another branch of it, and whatever else lies
// outside the repository, under the example config's rules and under `* /**`: each is
// refused with 403 naming why, audited, and never reaches GitHub, while the run's own
// repository, in any case and by its id, and GitHub's metadata still pass.
func TestOtherRepositoriesRefused(t *testing.T) {
	// config.example.yml's rules, and the other reads the controls make.
	exampleRules := []string{"GET /repos/*/*", "GET /repos/*/*/contents/**", "GET /repos/*/*/commits/**", "GET /repos/*/*/check-runs/**",
		"GET /repositories/*/contents/**", "GET /rate_limit", "GET /meta", "GET /licenses/*"}
	tests := []struct {
		path   string // below /api/github
		status int
		says   string // in the refusal
	}{
		{"/repos/stranger/fork/contents/x.go?ref=evil-branch", 403, "[other-repository]"},
		{"/repos/stranger/fork/commits", 403, "[other-repository]"},
		{"/repos/stranger/fork/commits/evil-branch", 403, "[other-repository]"},
		{"/repos/stranger/fork", 403, "[other-repository]"},
		{"/repos/stranger/r/contents/README.md", 403, "[other-repository]"},
		{"/repos/o/r-fork/contents/README.md", 403, "[other-repository]"},
		{"/repos/o/r.git/contents/README.md", 403, "[other-repository]"},
		{"/repos/o", 403, "[other-repository]"},
		{"/REPOS/Stranger/Fork/contents/x", 403, "[other-repository]"},
		{"/api/v3/repos/stranger/fork/contents/x", 403, "[other-repository]"},
		{"/repos/stranger/fork/contents/x?ref=main&owner=o&repo=r", 403, "[other-repository]"},
		{"/repositories/123456/contents/x.go", 403, "[other-repository]"},
		{"/repositories/0123/contents/x.go", 403, "[other-repository]"},
		{"/repositories/123456", 403, "[other-repository]"},
		{"/api/v3/repositories/9/commits", 403, "[other-repository]"},
		{"/feeds", 403, "[outside-the-repository]"},
		{"/notifications", 403, "[outside-the-repository]"},
		{"/enterprises/e/settings/billing", 403, "[outside-the-repository]"},
		{"/projects/1/columns", 403, "[outside-the-repository]"},
		{"/teams/5/members", 403, "[outside-the-repository]"},
		{"/marketplace_listing/plans", 403, "[outside-the-repository]"},

		// The run's repository and GitHub's own metadata.
		{"/repos/o/r", 200, ""},
		{"/repos/O/R/contents/x.go", 200, ""},
		{"/repos/o/r/commits/main", 200, ""},
		{"/repositories/123/contents/x.go", 200, ""},
		{"/rate_limit", 200, ""},
		{"/meta", 200, ""},
		{"/licenses/mit", 200, ""},
	}
	for _, rules := range [][]string{exampleRules, {"* /**"}} {
		f := newFixture(t, 0, func(c *Config) { c.APIAllow = rules })
		refused := 0
		for _, tc := range tests {
			t.Run(strings.Join(rules, ",")+"/"+tc.path, func(t *testing.T) {
				before := f.api.count()
				resp, body := f.do(t, "GET", "/api/github"+tc.path, map[string]string{"Authorization": "token sentinel"}, "")
				if resp.StatusCode != tc.status || !strings.Contains(body, tc.says) {
					t.Fatalf("status %d (%s), want %d naming %s", resp.StatusCode, body, tc.status, tc.says)
				}
				if reached := f.api.count() - before; reached != map[bool]int{true: 1, false: 0}[tc.status == 200] {
					t.Fatalf("%d requests reached GitHub", reached)
				}
			})
			if tc.status != 200 {
				refused++
			}
		}
		a := f.auditText(t)
		if got := strings.Count(a, `"allowed":false`); got != refused || !strings.Contains(a, "serves only the run's repository, o/r") {
			t.Fatalf("%d refusals audited, want %d saying why:\n%s", got, refused, a)
		}
	}

	// Without the repository's id, no /repositories/{id} path is served, its own included.
	f := newFixture(t, 0, func(c *Config) { c.APIAllow = []string{"* /**"}; c.RepositoryID = 0 })
	resp, body := f.do(t, "GET", "/api/github/repositories/123/contents/x.go", nil, "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "repository_id") {
		t.Fatalf("by id without the id configured: %d %s", resp.StatusCode, body)
	}
	if f.api.count() != 0 {
		t.Fatal("the request reached GitHub")
	}
}

// TestGitOtherRepositoriesRefused: the git gateway serves the run's repository only: a
// clone or fetch of a stranger's fork (any public repository, which the token can read)
// is refused before it reaches the git host; the run's own repository, in any case, is
// served.
func TestGitOtherRepositoriesRefused(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.GitBase = c.GitHubAPIBase })
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/git/stranger/fork.git/info/refs?service=git-upload-pack", 403},
		{"POST", "/git/stranger/fork.git/git-upload-pack", 403},
		{"GET", "/git/o/r-fork.git/info/refs?service=git-upload-pack", 403},
		{"GET", "/git/stranger/r.git/info/refs?service=git-upload-pack", 403},
		{"POST", "/git/stranger/fork.git/git-receive-pack", 403},
		{"GET", "/git/o/r.git.git/info/refs?service=git-upload-pack", 403},
		{"GET", "/git/o/r.git/info/refs?service=git-upload-pack", 200},
		{"GET", "/git/O/R.git/info/refs?service=git-upload-pack", 200},
		{"POST", "/git/o/r.git/git-upload-pack", 200},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := f.api.count()
			resp, body := f.do(t, tc.method, tc.path, nil, "0000")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 403 && (!strings.Contains(body, "[other-repository]") || f.api.count() != before) {
				t.Fatalf("refusal %q does not say why, or the request reached the git host", body)
			}
			if tc.status == 200 && f.api.count() != before+1 {
				t.Fatal("the run's repository was not served")
			}
		})
	}
	if a := f.auditText(t); strings.Count(a, "[other-repository]") != 6 {
		t.Fatalf("refusals not audited:\n%s", a)
	}
}

// TestGitNoPushWithoutPushRef: a run without a branch of its own (a plan or review run,
// PushRef empty) may not push at all: the gateway refuses receive-pack, the
// advertisement and the push alike, before the git host sees them, whatever the token.
func TestGitNoPushWithoutPushRef(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.GitBase = c.GitHubAPIBase; c.PushRef = "" })
	for _, tc := range []struct{ method, path string }{
		{"GET", "/git/o/r.git/info/refs?service=git-receive-pack"},
		{"POST", "/git/o/r.git/git-receive-pack"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := f.api.count()
			resp, body := f.do(t, tc.method, tc.path, nil, "0000")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "may not push") || f.api.count() != before {
				t.Fatalf("status %d (%s); reached the git host: %v", resp.StatusCode, body, f.api.count() != before)
			}
		})
	}
	if resp, _ := f.do(t, "GET", "/git/o/r.git/info/refs?service=git-upload-pack", nil, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("fetching is still served: status %d", resp.StatusCode)
	}
}

// TestGitPushGate: with pushes closed (the runner's setting while the agent runs), the
// agent's push of its own branch is refused before the git host sees it; opened (the
// runner's own push after the VM's last command), the same push goes through; closed
// again, refused again.
func TestGitPushGate(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) {
		c.GitBase = c.GitHubAPIBase
		c.PushRef = "refs/heads/bumper/12-1"
		c.PushClosed = true
	})
	g := f.gw
	push := func() (int, string) {
		resp, body := f.do(t, "GET", "/git/o/r.git/info/refs?service=git-receive-pack", nil, "")
		return resp.StatusCode, body
	}
	for _, step := range []struct {
		open   bool
		status int
	}{{false, http.StatusForbidden}, {true, http.StatusOK}, {false, http.StatusForbidden}} {
		g.SetPushOpen(step.open)
		before := f.api.count()
		status, body := push()
		if status != step.status || (status == http.StatusForbidden) != (f.api.count() == before) {
			t.Fatalf("push open %v: status %d (%s), reached the git host %v", step.open, status, body, f.api.count() != before)
		}
		if status == http.StatusForbidden && !strings.Contains(body, "pushes are closed") {
			t.Fatalf("refusal %q does not say why", body)
		}
	}
}
