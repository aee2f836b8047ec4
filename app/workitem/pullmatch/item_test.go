package pullmatch

import (
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
)

// TestItem: the index's record names the pull request, whatever its branch; else only a
// branch of the repository itself named as a work branch points at an item, and a
// fork's never does.
func TestItem(t *testing.T) {
	const repo = "acme/widgets"
	recs := []*ledger.Record{{Repository: repo, Issue: 4, PullRequest: 9}, {Repository: repo, Issue: 5}}
	for _, c := range []struct {
		name              string
		number            int
		headRepo, headRef string
		want              int
		ok                bool
	}{
		{"the index's, renamed branch", 9, repo, "renamed", 4, true},
		{"the index's, any head repository", 9, "", "", 4, true},
		{"unknown to the index, a work branch", 11, repo, "bumper/5-1", 5, true},
		{"unknown to the index, the head repository in other case", 11, "ACME/Widgets", "bumper/7-2", 7, true},
		{"a fork's branch named as a work branch", 12, "mallory/widgets", "bumper/5-1", 0, false},
		{"a branch that is no work branch", 13, repo, "feature", 0, false},
		{"no head known", 14, "", "", 0, false},
		{"number zero never matches a record without a pull request", 0, "", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, ok := Item(recs, repo, c.number, c.headRepo, c.headRef)
			if n != c.want || ok != c.ok {
				t.Fatalf("Item = %d, %v; want %d, %v", n, ok, c.want, c.ok)
			}
		})
	}
}
