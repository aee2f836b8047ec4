package gateway

import (
	"net/http"
	"net/url"
	"strings"
)

// The agent's only write to GitHub is the push of its own branch through the git
// gateway; every other write (pull request, comments, check runs, reviews, refs, labels)
// is made by the runner on the host, from the run's results (DESIGN, "Identity and
// credentials"). And text strangers can write (comments, reviews, discussions) is a
// prompt-injection path: the agent reads the approved task, not what anyone appended to
// it. So the GitHub API gateway refuses, whatever api_allow says:
//
//   - every method but GET and HEAD (spelled exactly so), anywhere: the agent's API is
//     read-only;
//   - the reads listed below with allMethods.
//
// apiRefusals is the one list of those refusals. The write entries are covered by the
// final "read-only" entry anyway; they are named so that a refusal says what it refused
// and why, and so that each category has its own test (api_attack_test.go). The first
// entry that matches decides, so narrow entries come before broad ones.
var apiRefusals = compileRefusals([]apiRefusal{
	// Text strangers can write, never served (prompt injection), reads included.
	{"issue-comments", allMethods, strangerText, []string{"/repos/*/*/issues/comments/**", "/repos/*/*/issues/*/comments/**"}},
	{"issue-timeline", allMethods, strangerText + " (the timeline carries the comments)", []string{"/repos/*/*/issues/*/timeline/**"}},
	{"pull-request-reviews", allMethods, strangerText + "; reviews are the host's to write", []string{"/repos/*/*/pulls/*/reviews/**"}},
	{"pull-request-review-comments", allMethods, strangerText, []string{"/repos/*/*/pulls/comments/**", "/repos/*/*/pulls/*/comments/**"}},
	{"commit-comments", allMethods, strangerText, []string{"/repos/*/*/comments/**", "/repos/*/*/commits/*/comments/**"}},
	{"discussions", allMethods, strangerText, []string{"/repos/*/*/discussions/**", "/orgs/*/discussions/**"}},
	{"team-discussions", allMethods, strangerText, []string{"/orgs/*/teams/*/discussions/**", "/teams/*/discussions/**"}},
	{"gists", allMethods, strangerText + " (gists and their comments are anyone's text, not the task)", []string{"/gists/**", "/users/*/gists/**"}},
	{"activity-events", allMethods, strangerText + " (event payloads carry comment bodies)", []string{"/events/**", "/repos/*/*/events/**", "/networks/*/*/events/**", "/orgs/*/events/**", "/users/*/events/**", "/users/*/received_events/**"}},

	// Host-only, reads included: nothing here is the agent's to see or to use.
	{"actions", allMethods, "workflows, runs, logs, secrets and variables are the host's; a dispatch would run code outside the sandbox", []string{"/repos/*/*/actions/**", "/orgs/*/actions/**"}},
	{"hooks", allMethods, "webhooks are the App's; their deliveries carry every event's payload", []string{"/repos/*/*/hooks/**", "/orgs/*/hooks/**"}},
	{"graphql", allMethods, "one POST there can run any mutation and read any comment, out of reach of these rules", []string{"/graphql/**"}},
	{"installation-and-app", allMethods, "the run's token and the App are the host's (the host revokes the token when the run ends)", []string{"/installation/**", "/app/**", "/app-manifests/**", "/applications/**"}},

	// Host-only writes: the runner makes them, from the run's results.
	{"git-database", writes, "refs, tags, blobs, trees and commits reach GitHub only as the push of the run's branch through the git gateway, which checks it", []string{"/repos/*/*/git/**"}},
	{"contents", writes, "a file write is a commit on any branch, around the git gateway's push policy", []string{"/repos/*/*/contents/**"}},
	{"check-runs-and-suites", writes, "check runs and suites report the host's verification, not the agent's word", []string{"/repos/*/*/check-runs/**", "/repos/*/*/check-suites/**"}},
	{"commit-statuses", writes, "statuses report the host's verification, not the agent's word", []string{"/repos/*/*/statuses/**"}},
	{"deployments", writes, "deployments and their statuses are the host's", []string{"/repos/*/*/deployments/**"}},
	{"merges", writes, "only a person merges; the run's branch changes only by its push", []string{"/repos/*/*/pulls/*/merge", "/repos/*/*/merges", "/repos/*/*/pulls/*/update-branch", "/repos/*/*/merge-upstream"}},
	{"pull-requests", writes, "only the runner opens and edits the run's pull request", []string{"/repos/*/*/pulls/**"}},
	{"labels", writes, "labels are the work-item ledger, which only the host moves", []string{"/repos/*/*/labels/**", "/repos/*/*/issues/*/labels/**"}},
	{"issues", writes, "issue text and state are the work-item ledger, which only the host writes", []string{"/repos/*/*/issues/**"}},
	{"repository-dispatch", writes, "a dispatch starts workflows outside the sandbox", []string{"/repos/*/*/dispatches"}},
	{"branch-protection-and-rulesets", writes, "protection and rulesets guard the branches the run must not touch", []string{"/repos/*/*/branches/**", "/repos/*/*/rulesets/**", "/orgs/*/rulesets/**"}},
	{"deploy-keys", writes, "a key would be a credential that outlives the run", []string{"/repos/*/*/keys/**", "/user/keys/**", "/user/gpg_keys/**", "/user/ssh_signing_keys/**"}},
	{"releases", writes, "releases are published by people", []string{"/repos/*/*/releases/**"}},
	{"forks-and-new-repositories", writes, "a new repository is outside the run's scope and outlives it", []string{"/repos/*/*/forks", "/repos/*/*/generate", "/user/repos", "/orgs/*/repos"}},
	{"starring-and-following", writes, "the run acts on its repository only", []string{"/user/starred/**", "/user/following/**", "/user/subscriptions/**", "/repos/*/*/subscription"}},
	{"repository-settings", writes, "settings, access and security configuration are the owners'", []string{
		"/repos/*/*", "/repos/*/*/topics", "/repos/*/*/transfer", "/repos/*/*/collaborators/**", "/repos/*/*/invitations/**",
		"/repos/*/*/teams/**", "/orgs/*/teams/*/repos/**", "/repos/*/*/environments/**", "/repos/*/*/pages/**",
		"/repos/*/*/vulnerability-alerts", "/repos/*/*/automated-security-fixes", "/repos/*/*/private-vulnerability-reporting",
		"/repos/*/*/properties/**", "/repos/*/*/autolinks/**", "/repos/*/*/interaction-limits", "/repos/*/*/immutable-releases",
		"/repos/*/*/code-scanning/**", "/repos/*/*/dependabot/**", "/repos/*/*/secret-scanning/**",
		"/repos/*/*/security-advisories/**", "/repos/*/*/codespaces/**", "/repos/*/*/lfs",
	}},

	// Everything else that is not a read.
	{"read-only", writes, "the agent's GitHub API is read-only: only GET and HEAD are forwarded; every write is the host's", []string{"/**"}},
})

const strangerText = "comments and reviews are text anyone can write, a prompt-injection path; the agent reads the approved task only"

// methodClass says which methods an apiRefusal applies to.
type methodClass int

const (
	// writes is every method but GET and HEAD spelled exactly so ("get" is not a read:
	// what an upstream makes of it is unknown).
	writes methodClass = iota + 1
	// allMethods is reads too.
	allMethods
)

// apiRefusal is one class of GitHub API operation refused whatever api_allow says.
type apiRefusal struct {
	name    string // named in the refusal, its audit line and the tests
	methods methodClass
	why     string
	// patterns are paths below the API base: a segment "*" matches one segment, a final
	// "**" the rest of the path, nothing included. A literal segment also matches itself
	// followed by a format suffix ("comments.json").
	patterns []string
}

type compiledRefusal struct {
	apiRefusal
	segs [][]string
}

func compileRefusals(list []apiRefusal) []compiledRefusal {
	out := make([]compiledRefusal, len(list))
	for i, r := range list {
		out[i].apiRefusal = r
		for _, p := range r.patterns {
			out[i].segs = append(out[i].segs, strings.Split(strings.Trim(p, "/"), "/"))
		}
	}
	return out
}

// isRead says whether method is one the agent's read-only API forwards.
func isRead(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// refusedAPI returns the refusal that applies to method and path (the escaped path below
// /api/github), or nil.
func refusedAPI(method, path string) *compiledRefusal {
	segs := apiSegments(path)
	read := isRead(method)
	for i := range apiRefusals {
		r := &apiRefusals[i]
		if r.methods == writes && read {
			continue
		}
		for _, p := range r.segs {
			if matchRefusal(p, segs) {
				return r
			}
		}
	}
	return nil
}

// apiSegments turns a path into the segments GitHub acts on, so that no spelling of an
// operation escapes its refusal: percent-encoding decoded (checkPath has already refused
// encoded '/', '.' and '\'), case folded (the patterns' segments are fixed lower-case
// words; names match "*" whatever their case), a trailing slash dropped, GitHub
// Enterprise's /api/v3 and /api/graphql prefixes removed, and /repositories/{id}/…
// (the same resource by the repository's number) read as /repos/{owner}/{repo}/….
func apiSegments(path string) []string {
	p := strings.ToLower(strings.Trim(mustUnescape(path), "/"))
	segs := strings.Split(p, "/")
	for len(segs) >= 2 && segs[0] == "api" && segs[1] == "v3" {
		segs = segs[2:]
	}
	if len(segs) >= 2 && segs[0] == "api" && segs[1] == "graphql" {
		segs = segs[1:]
	}
	if len(segs) >= 2 && segs[0] == "repositories" {
		segs = append([]string{"repos", segs[1], "_"}, segs[2:]...)
	}
	return segs
}

func matchRefusal(pattern, segs []string) bool {
	for i, p := range pattern {
		if p == "**" {
			return true
		}
		if i >= len(segs) {
			return false
		}
		if p != "*" && segs[i] != p && !strings.HasPrefix(segs[i], p+".") {
			return false
		}
	}
	return len(segs) == len(pattern)
}

// methodOverride names the header or query parameter by which r asks an upstream to treat
// it as another method (a GET that a framework would run as a DELETE), or returns "".
func methodOverride(r *http.Request) string {
	for name := range r.Header {
		n := strings.ToLower(name)
		if strings.Contains(n, "method-override") || n == "x-http-method" {
			return name
		}
	}
	for _, pair := range strings.FieldsFunc(r.URL.RawQuery, func(c rune) bool { return c == '&' || c == ';' }) {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if k := strings.ToLower(strings.TrimSpace(key)); k == "_method" || strings.HasPrefix(k, "_method[") {
			return "_method"
		}
	}
	return ""
}
