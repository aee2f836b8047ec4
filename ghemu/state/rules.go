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

// Merge states GitHub reports as mergeable_state (the GraphQL MergeStateStatus,
// lower-cased); the emulator never reports has_hooks (pre-receive hooks of GitHub
// Enterprise).
const (
	MergeUnknown  = "unknown"  // not computed yet, or the pull request is closed
	MergeDirty    = "dirty"    // the merge commit cannot be cleanly created
	MergeDraft    = "draft"    // a draft pull request
	MergeBlocked  = "blocked"  // branch protection is not satisfied (reviews, required checks)
	MergeBehind   = "behind"   // the head is out of date and protection requires it not to be
	MergeUnstable = "unstable" // mergeable, with a check or status that did not pass
	MergeClean    = "clean"    // mergeable, everything passing
)

// MergeState is what GitHub reports as mergeable_state, from the last real merge of
// the two commits (Pull.Check): unknown when closed or not computed for the current
// commits; dirty on a conflict; draft for a draft; blocked while branch protection is
// not satisfied; behind when the base has commits the head lacks and protection
// requires an up-to-date head; unstable when a check run or commit status on the head
// did not pass; clean otherwise. Blocked wins over behind, as on GitHub, which reports
// a pull request waiting for its review as blocked however far behind it is.
func (r *Repo) MergeState(is *Issue, p *Pull) string {
	mc := p.Current()
	switch {
	case p.Merged || is.State == "closed" || mc == nil:
		return MergeUnknown
	case mc.Conflict:
		return MergeDirty
	case p.Draft:
		return MergeDraft
	case r.ProtectionUnmet(p, "") != "":
		return MergeBlocked
	case mc.Behind && r.protected[p.Base].RequiresUpToDate():
		return MergeBehind
	case r.headUnstable(p.HeadSHA):
		return MergeUnstable
	}
	return MergeClean
}

// Mergeable is GitHub's mergeable: nil (null) while unknown, false on a conflict.
func (r *Repo) Mergeable(is *Issue, p *Pull) *bool {
	if p.Merged || is.State == "closed" || p.Current() == nil {
		return nil
	}
	ok := !p.Current().Conflict
	return &ok
}

// headUnstable reports whether the latest check run of some name, or the latest commit
// status of some context, on sha has not passed (still running counts).
func (r *Repo) headUnstable(sha string) bool {
	latest := map[string]*CheckRun{}
	for _, cr := range r.CheckRunsOn(sha) {
		latest[cr.Name+"\x00"+strconv.FormatInt(cr.AppID, 10)] = cr
	}
	for _, cr := range latest {
		if !checkRunPassed(cr) {
			return true
		}
	}
	for _, st := range r.LatestStatuses(sha) {
		if st.State != "success" {
			return true
		}
	}
	return false
}

// checkRunPassed is what a required check asks of a check run: completed with success,
// neutral or skipped.
func checkRunPassed(cr *CheckRun) bool {
	return cr.Status == "completed" && (cr.Conclusion == "success" || cr.Conclusion == "neutral" || cr.Conclusion == "skipped")
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
		return checkRunPassed(best)
	}
	if pinned {
		return false
	}
	st := r.LatestStatus(sha, name)
	return st != nil && st.State == "success"
}

// VisibleReviews are pull request n's reviews as viewer sees them, oldest first: a
// pending review only to its author, as GitHub shows it ("" sees none).
func (r *Repo) VisibleReviews(n int, viewer string) []*Review {
	var out []*Review
	for _, rv := range r.Reviews(n) {
		if rv.State == "PENDING" && (viewer == "" || Key(rv.User) != Key(viewer)) {
			continue
		}
		out = append(out, rv)
	}
	return out
}

// VisibleReviewComments are pull request n's inline comments in creation order as
// viewer sees them, and only review's when review is not 0. A pending review's
// comments are listed only under their review, to its author: GitHub lists a pull
// request's comments without them, and shows them to no one else.
func (r *Repo) VisibleReviewComments(n int, review int64, viewer string) []*ReviewComment {
	var out []*ReviewComment
	for _, rc := range r.ReviewComments(n) {
		rv := r.reviews[rc.ReviewID]
		if rv == nil || (review != 0 && rc.ReviewID != review) ||
			(rv.State == "PENDING" && (review == 0 || viewer == "" || Key(rv.User) != Key(viewer))) {
			continue
		}
		out = append(out, rc)
	}
	return out
}
