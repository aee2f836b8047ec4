package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// The agent's only write to GitHub is the push of its own branch through the git
// gateway; every other write (pull request, comments, check runs, reviews, refs, labels)
// is made by the runner on the host, from the run's results (DESIGN, "Identity and
// credentials"). And text strangers can write (comments, reviews, discussions, issues
// and pull requests, forks' commits and code) is a prompt-injection path: the agent reads
// the approved task, as the runner froze it at approval, not what anyone wrote or edited
// since. So the GitHub API gateway refuses, whatever api_allow says:
//
//   - every method but GET and HEAD (spelled exactly so), anywhere: the agent's API is
//     read-only;
//   - the reads listed below with allMethods: stranger-written text, issues and pull
//     requests, their events, search, anything that names a fork's ref, security alerts
//     and secrets, and the host's own surfaces.
//
// What stays readable under "* /**" is the run's repository as its maintainers keep it:
// the repository, contents and commits of its branches, git objects, check runs,
// statuses, releases, labels, branches. Other repositories, users and organisations are
// refused too (repository.go).
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

	// Reads refused: what issue and pull request authors write and edit (anyone, on a
	// public repository), forks' code, search beyond the repository, and alerts and
	// secrets. After the write entries, so that a write is named for what it writes.
	{"issue-events", allMethods, strangerText + " (issue events carry titles, labels, renames and cross-references others write)", []string{"/repos/*/*/issues/events/**", "/repos/*/*/issues/*/events/**"}},
	{"sub-issues", allMethods, "sub-issues, parents and dependencies are other issues, whose text their authors write and edit; the agent gets the approved task from the runner", []string{
		"/repos/*/*/issues/*/sub_issues/**", "/repos/*/*/issues/*/sub_issue", "/repos/*/*/issues/*/parent", "/repos/*/*/issues/*/dependencies/**",
	}},
	{"issue-text", allMethods, issueText, []string{"/repos/*/*/issues/**", "/issues/**", "/user/issues/**", "/orgs/*/issues/**"}},
	{"pull-request-text", allMethods, "pull requests (title, body, their commits' messages and their files) are written by their authors, from forks too, a prompt-injection path; the run's own pull request is the runner's", []string{
		"/repos/*/*/pulls/**", "/repos/*/*/commits/*/pulls/**",
	}},
	{"search", allMethods, "search returns issue, pull request, comment and commit text, and any repository's code: text strangers write, beyond the run's repository", []string{"/search/**"}},
	{"fork-refs", allMethods, "a pull request's ref (refs/pull/…, or pull/… which GitHub resolves the same) or another repository's branch (owner:branch in a compare; a compare range of four dots or more, which could be split either way) is a fork's code and commit messages, which strangers write; the agent reads its repository's branches", nil}, // matched by namesForkRef (refusalMatchers)
	// matched by listsPullRefs (refusalMatchers)
	{"pull-ref-listings", allMethods, "listing refs by a prefix of pull/ or refs/pull/ (pu, refs/p, …), or all of them (git/refs, git/matching-refs without a prefix), lists pull requests' refs: forks' commits, which strangers write; name the branch or tag (git/ref/heads/main, git/matching-refs/heads/)", nil},
	{"check-run-annotations", allMethods, "annotations are what a workflow's steps print, from a fork's pull request too (its code runs in the workflow): text strangers write, a prompt-injection path", []string{"/repos/*/*/check-runs/*/annotations/**"}},
	{"security-alerts-and-secrets", allMethods, "security alerts map unfixed vulnerabilities and leaked secrets, and secrets and variables are the host's: none is the agent's to read", []string{
		"/repos/*/*/secret-scanning/**", "/repos/*/*/code-scanning/**", "/repos/*/*/dependabot/**", "/repos/*/*/codespaces/**",
		"/repos/*/*/security-advisories/**", "/repos/*/*/vulnerability-alerts", "/repos/*/*/environments/*/secrets/**", "/repos/*/*/environments/*/variables/**",
		"/orgs/*/secret-scanning/**", "/orgs/*/code-scanning/**", "/orgs/*/dependabot/**", "/orgs/*/codespaces/**", "/orgs/*/security-advisories/**",
		"/enterprises/*/secret-scanning/**", "/enterprises/*/code-scanning/**", "/enterprises/*/dependabot/**", "/user/codespaces/**",
	}},

	// Other people and other repositories: the run reads its own repository only
	// (repositoryScope refuses the rest too; these entries name the common ones).
	{"forks-and-repository-lists", allMethods, "lists of forks and of users' and organisations' repositories point at code strangers write, outside the run's repository", []string{
		"/repos/*/*/forks/**", "/users/*/repos/**", "/users/*/starred/**", "/users/*/subscriptions/**", "/orgs/*/repos/**", "/user/repos/**", "/repositories",
	}},
	{"user-and-organization-profiles", allMethods, "profiles (names, bios, blogs, organisation descriptions) are text their owners write, and their lists lead outside the run's repository", []string{
		"/users/**", "/user/**", "/orgs/**", "/organizations/**",
	}},

	// Everything else that is not a read.
	{"read-only", writes, "the agent's GitHub API is read-only: only GET and HEAD are forwarded; every write is the host's", []string{"/**"}},
})

const strangerText = "comments and reviews are text anyone can write, a prompt-injection path; the agent reads the approved task only"

const issueText = "issues are text their authors write and can edit after approval, and others' issues are anyone's text: a prompt-injection path; the agent gets the approved task from the runner, frozen at approval"

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
	// followed by a format suffix ("comments.json"). An entry without patterns is matched
	// by its function in refusalMatchers.
	patterns []string
}

// refusalMatchers decide the entries that a path pattern cannot express, from the
// segments (as apiSegments gives them) and the raw query.
var refusalMatchers = map[string]func(segs []string, rawQuery string) bool{
	"fork-refs":         namesForkRef,
	"pull-ref-listings": listsPullRefs,
}

type compiledRefusal struct {
	apiRefusal
	segs  [][]string
	match func(segs []string, rawQuery string) bool
}

func compileRefusals(list []apiRefusal) []compiledRefusal {
	out := make([]compiledRefusal, len(list))
	for i, r := range list {
		out[i].apiRefusal = r
		out[i].match = refusalMatchers[r.name]
		for _, p := range r.patterns {
			out[i].segs = append(out[i].segs, strings.Split(strings.Trim(p, "/"), "/"))
		}
	}
	return out
}

// isRead says whether method is one the agent's read-only API forwards.
func isRead(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// refusedAPI returns the refusal that applies to method and path (the escaped path below
// /api/github) with its raw query, or nil.
func refusedAPI(method, path, rawQuery string) *compiledRefusal {
	segs := apiSegments(path)
	read := isRead(method)
	for i := range apiRefusals {
		r := &apiRefusals[i]
		if r.methods == writes && read {
			continue
		}
		if r.match != nil && r.match(segs, rawQuery) {
			return r
		}
		for _, p := range r.segs {
			if matchRefusal(p, segs) {
				return r
			}
		}
	}
	return nil
}

// refKeys are the query parameters by which the GitHub API takes a ref or a commit-ish
// (contents?ref=, commits?sha=, pulls?head=&base=, deployments?ref=, …).
var refKeys = map[string]bool{"ref": true, "sha": true, "head": true, "base": true, "branch": true, "commit_sha": true, "from": true, "to": true}

// namesForkRef says whether a request names a pull request's ref: refs/pull/… anywhere
// in its path or query, or pull/… (which GitHub resolves as refs/pull/…, the first place
// git looks for a short name) as a ref in its path or in a ref parameter; or another
// repository's branch (owner:branch) in a compare. The file path below /contents/ or
// /readme/ is not a ref ("docs/pull/x.md" is a file), so it is not read as one; its ref
// is in the query.
func namesForkRef(segs []string, rawQuery string) bool {
	if len(segs) >= 4 && segs[0] == "repos" {
		rest := segs[3:]
		if rest[0] == "contents" || rest[0] == "readme" {
			rest = rest[:1]
		}
		for i := range rest {
			if isPullRef(strings.Join(rest[i:], "/")) {
				return true
			}
		}
		if basehead := strings.Join(rest[1:], "/"); rest[0] == "compare" && (strings.Contains(basehead, ":") || strings.Contains(basehead, "....")) {
			// A ref name never holds "..": four dots or more is a range GitHub
			// could split either way ("main....pull/9/head").
			return true
		}
	}
	// Rack reads ';' as a separator as well as '&'.
	for _, pair := range strings.FieldsFunc(rawQuery, func(c rune) bool { return c == '&' || c == ';' }) {
		key, value, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		value = strings.ToLower(value)
		key = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(key)), "[]") // ref[]=… is a ref to Rack too
		if strings.Contains(value, "refs/pull") || (refKeys[key] && isPullRef(value)) {
			return true
		}
	}
	return false
}

// revRange splits "a...b" and "a..b" into their revisions, and so any run of two dots or
// more ("a....b" is read as "a" and "b" too, never as "a" and ".b").
var revRange = regexp.MustCompile(`\.{2,}`)

// listsPullRefs says whether a request lists refs by a prefix that pull requests' refs
// share: git/matching-refs/{prefix} and the older git/refs/{prefix} list every ref
// starting with refs/{prefix}, so any prefix of "pull/" (p, pu, pul, pull) or of
// "refs/pull/" (refs/p, …), or none at all (every ref), lists refs/pull/*.
func listsPullRefs(segs []string, _ string) bool {
	if len(segs) < 5 || segs[0] != "repos" || segs[3] != "git" {
		return false
	}
	if list, _, _ := strings.Cut(segs[4], "."); list != "matching-refs" && list != "refs" {
		return false
	}
	prefix := strings.Join(segs[5:], "/")
	return prefix == "" || strings.HasPrefix("pull/", prefix) || strings.HasPrefix("refs/pull/", prefix)
}

// isPullRef says whether s (lower-case) is, or is a range with a side that is, a pull
// request's ref: refs/pull/…, pull/… or pull itself (all of them, to git/matching-refs).
func isPullRef(s string) bool {
	if strings.Contains(s, "refs/pull") {
		return true
	}
	for _, rev := range revRange.Split(s, -1) {
		rev = strings.TrimPrefix(strings.TrimSpace(rev), "refs/")
		if rev == "pull" || strings.HasPrefix(rev, "pull/") {
			return true
		}
	}
	return false
}

// checkAPIChars refuses a GitHub API path (escaped, below /api/github) whose decoded
// segments hold a character a matcher might not read as GitHub does: the refusal table
// and the rules compare plain segments, and "comments;x", "comments%00", "comments%20"
// or "comments" with a zero-width space could each be read upstream as "comments". A
// segment may hold only letters, digits, "-", ".", "_", "~" and ":" (labels such as
// "bumper:approved", owner:branch in a compare). Below /repos/{owner}/{repo}/contents/
// or /readme/, once those fixed segments passed, a file name may hold any visible
// character and spaces, but never ';', a control, invisible or format character, or
// invalid UTF-8. It returns the reason, or "".
func checkAPIChars(path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	files := fileTail(segs)
	for i, raw := range segs {
		seg, err := url.PathUnescape(raw)
		if err != nil {
			return fmt.Sprintf("path segment %q is not valid percent-encoding", raw)
		}
		if i >= files {
			if msg := checkFileName(seg); msg != "" {
				return fmt.Sprintf("file path segment %q holds %s", raw, msg)
			}
			continue
		}
		for _, c := range []byte(seg) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == ':') {
				return fmt.Sprintf("path segment %q holds the character %q: API path segments may hold only letters, digits and - . _ ~ : (file names below /contents/ excepted)", raw, describeByte(seg, c))
			}
		}
	}
	return ""
}

// fileTail returns the index of the first segment of a file path (below
// repos/{owner}/{repo}/contents/ or /readme/, or their /api/v3 and /repositories/{id}
// forms), or len(segs) when the path has none.
func fileTail(segs []string) int {
	i := 0
	for i+1 < len(segs) && strings.EqualFold(segs[i], "api") && strings.EqualFold(segs[i+1], "v3") {
		i += 2
	}
	at := -1
	switch {
	case i+3 < len(segs) && strings.EqualFold(segs[i], "repos"):
		at = i + 3
	case i+2 < len(segs) && strings.EqualFold(segs[i], "repositories"):
		at = i + 2
	}
	if at < 0 || !(strings.EqualFold(segs[at], "contents") || strings.EqualFold(segs[at], "readme")) {
		return len(segs)
	}
	return at + 1
}

// checkFileName says what a decoded file-name segment holds that no request should carry,
// or "". Beside ';' and '%', it refuses every character a reader cannot see or that
// reorders the display (internal/hiddenchar, the one rule for hidden text) and, since a
// server may read them otherwise (fold, trim or drop them), every other character that
// is not printable: spaces but U+0020, private-use and unassigned code points.
func checkFileName(seg string) string {
	if !utf8.ValidString(seg) {
		return "a byte that is not a UTF-8 character"
	}
	for _, r := range seg {
		switch {
		case r == ';':
			return "the character ';' (a matrix parameter to some servers)"
		case r == '%':
			return "the character '%' (an encoding decoded twice)"
		case r == ' ':
		case hiddenchar.Is(r), !unicode.IsPrint(r):
			return fmt.Sprintf("the control, invisible or format character %U", r)
		}
	}
	return ""
}

// describeByte names the character of seg that starts with (or is) byte c, for a refusal.
func describeByte(seg string, c byte) string {
	if c < utf8.RuneSelf {
		return string(rune(c))
	}
	i := strings.IndexByte(seg, c)
	r, _ := utf8.DecodeRuneInString(seg[i:])
	if r == utf8.RuneError {
		return fmt.Sprintf("\\x%02x", c)
	}
	return fmt.Sprintf("%U", r)
}

// apiSegments turns a path into the segments GitHub acts on, so that no spelling of an
// operation escapes its refusal: percent-encoding decoded (checkPath has already refused
// encoded '/', '.' and '\'), case folded (the patterns' segments are fixed lower-case
// words; names match "*" whatever their case), a trailing slash dropped, GitHub
// Enterprise's /api/v3 and /api/graphql prefixes removed, and /repositories/{id}/…
// (the same resource by the repository's number) read as /repos/{owner}/{repo}/….
func apiSegments(path string) []string {
	segs := baseSegments(path)
	if len(segs) >= 2 && segs[0] == "api" && segs[1] == "graphql" {
		segs = segs[1:]
	}
	if len(segs) >= 2 && segs[0] == "repositories" {
		segs = append([]string{"repos", segs[1], "_"}, segs[2:]...)
	}
	return segs
}

// baseSegments is the path decoded, lower-cased and split, without the /api/v3 prefix a
// GitHub Enterprise base adds: the form every API check reads.
func baseSegments(path string) []string {
	segs := strings.Split(strings.ToLower(strings.Trim(mustUnescape(path), "/")), "/")
	for len(segs) >= 2 && segs[0] == "api" && segs[1] == "v3" {
		segs = segs[2:]
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
