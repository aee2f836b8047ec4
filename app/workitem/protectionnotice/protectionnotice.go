// Package protectionnotice is what a work item's status comment tells the repository's
// owner about the base branch's protection when the item starts. Bumper never merges,
// but only branch protection makes "humans merge" true of everyone else too: the notice
// says what the protection leaves open (no approving review required, a bypass for the
// App, the reviewer's verdict not required or required from any source), and the run
// happens either way.
package protectionnotice

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/app/workitem/verdictpost"
)

// Protection is what a branch's protection enforces, as far as the App checks it.
type Protection struct {
	// RequiredReviews is the number of approving reviews a merge needs (0: none).
	RequiredReviews int
	// BypassApps are the App slugs allowed to merge without the reviews.
	BypassApps []string
	// EnforceAdmins applies the rules to administrators too.
	EnforceAdmins bool
	// RequiredChecks are the checks a merge needs.
	RequiredChecks []RequiredCheck
}

// RequiredCheck is a status check a branch's protection requires: by name from any
// source (AppID 0), or pinned to one App, whose check runs alone satisfy it.
type RequiredCheck struct {
	Name  string
	AppID int64
}

// Unprotected is the notice for a base branch with no protection at all; reviewer says
// the repository's policy runs the reviewer, whose check the branch should then require.
func Unprotected(branch string, reviewer bool) string {
	return fmt.Sprintf("`%s` is not protected, so nothing stops a merge of Bumper's pull request without a person's review. Protect it (Settings → Branches): require a pull request with at least one approving review%s.",
		branch, verdictAdvice(reviewer))
}

// Forbidden is the notice when the App may not read the branch's protection.
func Forbidden(branch string) string {
	return fmt.Sprintf("Bumper cannot read the protection of `%s` (the App has no Administration: read permission), so it cannot tell whether a person's review is required before a merge.", branch)
}

// Unread is the notice when reading the branch's protection failed with why (one line).
func Unread(branch, why string) string {
	return fmt.Sprintf("Bumper could not read the protection of `%s` (%s), so it cannot tell whether a person's review is required before a merge.", branch, why)
}

// App is the App as the protection is checked against it: its slug (when its login
// could be learned: Known) and its ID (0: unknown), which a required verdict check
// should be pinned to.
type App struct {
	Slug  string
	Known bool
	ID    int64
}

// Gaps is the notice for branch protected by p: what it leaves open, or "" when it
// requires a review app cannot bypass (and, with reviewer, the App's own verdict).
func Gaps(branch string, p Protection, app App, reviewer bool) string {
	var gaps []string
	if p.RequiredReviews < 1 {
		gaps = append(gaps, "does not require an approving review before a merge")
	}
	if app.Known && slices.ContainsFunc(p.BypassApps, func(a string) bool { return strings.EqualFold(a, app.Slug) }) {
		gaps = append(gaps, fmt.Sprintf("lets the %s App bypass its pull request rules", app.Slug))
	}
	if reviewer {
		i := slices.IndexFunc(p.RequiredChecks, func(c RequiredCheck) bool { return c.Name == verdictpost.Name })
		switch {
		case i < 0:
			gaps = append(gaps, "does not require the `"+verdictpost.Name+"` check")
		case app.ID != 0 && p.RequiredChecks[i].AppID != app.ID:
			// A required context from any source is met by a commit status anyone with
			// write access can post, or another App's check of that name.
			gaps = append(gaps, "requires `"+verdictpost.Name+"` from any source, so a commit status or another App's check of that name meets it (pin it to the App: expected source)")
		}
	}
	if len(gaps) == 0 {
		return ""
	}
	return fmt.Sprintf("`%s`'s protection %s. Bumper never merges, and this run goes ahead, but the branch does not hold it to a person's review and Bumper's verdict: require at least one approving review, with no bypass for the App%s.",
		branch, strings.Join(gaps, ", and "), verdictAdvice(reviewer))
}

// verdictAdvice suggests requiring the reviewer's check where there is one.
func verdictAdvice(reviewer bool) string {
	if !reviewer {
		return ""
	}
	return ", and the `" + verdictpost.Name + "` check with the App as its expected source"
}
