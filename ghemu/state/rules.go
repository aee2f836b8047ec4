package state

import (
	"slices"
	"strconv"
	"strings"
)

// GitHub's rules read off the world: repository roles and permission levels, and what
// branch protection asks of a merge. The REST API, git over HTTP and the web view judge
// with the same ones.

var roleRank = map[string]int{"": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// RoleAtLeast reports whether the repository role have is want or above (read, triage,
// write, maintain, admin); any role is at least "".
func RoleAtLeast(have, want string) bool {
	if want == "" {
		return true
	}
	return roleRank[have] >= roleRank[want]
}

// ValidRole reports whether perm names a repository role.
func ValidRole(perm string) bool {
	_, ok := roleRank[perm]
	return ok && perm != ""
}

var levelRank = map[string]int{"": 0, "read": 1, "write": 2, "admin": 3}

// LevelAtLeast reports whether the App permission level have is want or above (read,
// write, admin); any level is at least "".
func LevelAtLeast(have, want string) bool {
	if want == "" {
		return true
	}
	return levelRank[have] >= levelRank[want]
}

// conclusions are the conclusions GitHub allows a check run or a workflow run.
var conclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true,
	"neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}

// ValidConclusion reports whether c is a conclusion GitHub allows a check run or a
// workflow run: success, failure, neutral, cancelled, skipped, stale, timed_out or
// action_required.
func ValidConclusion(c string) bool { return conclusions[c] }

// BypassedBy reports whether the App with slug may merge without the approving
// reviews: an App named in bypass_pull_request_allowances.apps. "" (a person) never is.
func (p *Protection) BypassedBy(slug string) bool {
	return slug != "" && slices.ContainsFunc(p.BypassApps, func(s string) bool { return strings.EqualFold(s, slug) })
}

// MergeState is what GitHub reports as mergeable_state: "unknown" once merged or
// closed, "blocked" while branch protection is not satisfied, "clean" otherwise.
func (r *Repo) MergeState(is *Issue, p *Pull) string {
	if p.Merged || is.State == "closed" {
		return "unknown"
	}
	if r.ProtectionUnmet(p, "") != "" {
		return "blocked"
	}
	return "clean"
}

// ProtectionUnmet says why branch protection on the pull request's base forbids the
// merge, or "". app is the slug of the App the merger acts as, whose bypass applies;
// "" for a person, and for mergeable_state, which is the same for everyone.
func (r *Repo) ProtectionUnmet(p *Pull, app string) string {
	prot := r.protected[p.Base]
	if prot == nil {
		return ""
	}
	for _, name := range prot.RequiredChecks {
		if !r.CheckPassed(prot, p.HeadSHA, name) {
			return "Required status check \"" + name + "\" is expected."
		}
	}
	if prot.RequiredReviews > 0 && !prot.BypassedBy(app) {
		approvals := map[string]bool{}
		latest := map[string]string{}
		for _, rv := range r.Reviews(p.Number) {
			if rv.State == "APPROVED" || rv.State == "CHANGES_REQUESTED" || rv.State == "DISMISSED" {
				latest[Key(rv.User)] = rv.State
			}
		}
		for u, st := range latest {
			if st == "CHANGES_REQUESTED" {
				return "Changes requested by " + u + "."
			}
			if st == "APPROVED" {
				approvals[u] = true
			}
		}
		if len(approvals) < prot.RequiredReviews {
			return "At least " + strconv.Itoa(prot.RequiredReviews) + " approving review is required by reviewers with write access."
		}
	}
	return ""
}

// CheckPassed reports whether a required check is met on sha, as GitHub decides: a
// check pinned to an App by the latest check run of that name that App created; an
// unpinned one by the latest check run of that name from anyone, or else by the latest
// commit status of that context (contexts are case-insensitive). Who may post a status
// or create a check run is wide (any writer, any App with checks: write), so only a pin
// ties a check to its author.
func (r *Repo) CheckPassed(prot *Protection, sha, name string) bool {
	appID, pinned := prot.CheckApps[name]
	var best *CheckRun
	for _, cr := range r.CheckRunsOn(sha) {
		if cr.Name != name || pinned && cr.AppID != appID {
			continue
		}
		best = cr // the newest so far: CheckRunsOn is oldest first
	}
	if best != nil {
		return best.Status == "completed" &&
			(best.Conclusion == "success" || best.Conclusion == "neutral" || best.Conclusion == "skipped")
	}
	if pinned {
		return false
	}
	st := r.LatestStatus(sha, name)
	return st != nil && st.State == "success"
}

// VisibleReviewComments are pull request n's inline comments in creation order, those
// of pending reviews left out (GitHub shows them to their author only), and only
// review's when review is not 0 (its pending comments included).
func (r *Repo) VisibleReviewComments(n int, review int64) []*ReviewComment {
	var out []*ReviewComment
	for _, rc := range r.ReviewComments(n) {
		rv := r.reviews[rc.ReviewID]
		if rv == nil || (review != 0 && rc.ReviewID != review) || (review == 0 && rv.State == "PENDING") {
			continue
		}
		out = append(out, rc)
	}
	return out
}
