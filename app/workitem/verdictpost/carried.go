package verdictpost

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/internal/mdcode"
)

// DiffDigest is the digest of a pull request's diff as GitHub lists it: each file's
// path and patch, in path order. Equal digests before and after GitHub merged the base
// into the branch mean the reviewer's verdict still judges what the pull request changes.
func DiffDigest(files []File) string {
	files = append([]File(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%d %s\n%d %s\n", len(f.Path), f.Path, len(f.Patch), f.Patch)
	}
	return ledger.ContentRevision([]byte(b.String()))
}

// Carried is the bumper/verdict check run of a head GitHub's merge of the base made
// (u), whose diff is the one the reviewer judged (v): the same conclusion, saying so.
func Carried(v *ledger.Verdict, u *ledger.BranchUpdate, head string) Check {
	conclusion, word := "failure", "Failure"
	if v.Passed {
		conclusion, word = "success", "Success"
	}
	what := "no valid verdict"
	if v.Verdict != "" {
		what = fmt.Sprintf("%s at %.2f", v.Verdict, v.Confidence)
	}
	summary := fmt.Sprintf("**%s, carried over.** GitHub merged `%.12s` of the base branch into this pull request's branch (Bumper asked for it: the branch must be up to date to merge). "+
		"The pull request's diff (its files and their changes, as GitHub lists them) is the same as on `%.12s`, which Bumper's reviewer judged (attempt %d): %s. "+
		"This is not an approval: Bumper never approves or merges; a person reviews and merges.\n",
		word, u.To, u.From, v.Attempt, mdcode.Span(what))
	return Check{Head: head, Conclusion: conclusion,
		Title: fmt.Sprintf("%s, carried over from %.12s: %s", what, u.From, conclusion), Summary: summary}
}
