package pullmatch

import (
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
)

// TestItem: the index's record names the pull request, whatever its branch; else only
// the App's pull request from a branch of the repository itself named as a work branch
// points at an item: a fork's, or a person's, never does.
func TestItem(t *testing.T) {
	const repo, bot = "acme/widgets", "bumper[bot]"
	recs := []*ledger.Record{{Repository: repo, Issue: 4, PullRequest: 9}, {Repository: repo, Issue: 5}}
	for _, c := range []struct {
		name   string
		number int
		got    Got
		want   int
		ok     bool
	}{
		{"the index's, renamed branch", 9, Got{HeadRepo: repo, Author: bot, HeadRef: "renamed"}, 4, true},
		{"the index's, nothing else known", 9, Got{}, 4, true},
		{"unknown to the index, the App's from a work branch", 11, Got{HeadRepo: repo, Author: bot, HeadRef: "bumper/5-1"}, 5, true},
		{"unknown to the index, names in other case", 11, Got{HeadRepo: "ACME/Widgets", Author: "Bumper[bot]", HeadRef: "bumper/7-2"}, 7, true},
		{"a fork's branch named as a work branch", 12, Got{HeadRepo: "mallory/widgets", Author: bot, HeadRef: "bumper/5-1"}, 0, false},
		{"a writer's branch named as a work branch", 12, Got{HeadRepo: repo, Author: "writer", HeadRef: "bumper/5-2"}, 0, false},
		{"the App's branch that is no work branch", 13, Got{HeadRepo: repo, Author: bot, HeadRef: "feature"}, 0, false},
		{"no head known", 14, Got{}, 0, false},
		{"the author unknown", 15, Got{HeadRepo: repo, HeadRef: "bumper/5-1"}, 0, false},
		{"number zero never matches a record without a pull request", 0, Got{}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, ok := Item(recs, repo, bot, c.number, c.got)
			if n != c.want || ok != c.ok {
				t.Fatalf("Item = %d, %v; want %d, %v", n, ok, c.want, c.ok)
			}
		})
	}
}

// TestNamed: an event that names the branch finds the index's item by number, else the
// item the branch names, whoever's branch it is (the handler's check of the record
// decides); a branch that is no work branch names none.
func TestNamed(t *testing.T) {
	recs := []*ledger.Record{{Repository: "acme/widgets", Issue: 4, PullRequest: 9}}
	for _, c := range []struct {
		name    string
		number  int
		headRef string
		want    int
		ok      bool
	}{
		{"the index's, renamed branch", 9, "renamed", 4, true},
		{"a work branch", 11, "bumper/5-1", 5, true},
		{"no work branch", 12, "feature", 0, false},
		{"nothing known", 0, "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n, ok := Named(recs, c.number, c.headRef); n != c.want || ok != c.ok {
				t.Fatalf("Named = %d, %v; want %d, %v", n, ok, c.want, c.ok)
			}
		})
	}
}

// TestByNumber: only a record naming the pull request finds its item; number zero,
// which a record without a pull request holds, finds none.
func TestByNumber(t *testing.T) {
	recs := []*ledger.Record{{Issue: 3}, {Issue: 4, PullRequest: 9}}
	if n, ok := ByNumber(recs, 9); n != 4 || !ok {
		t.Fatalf("ByNumber(9) = %d, %v; want 4, true", n, ok)
	}
	for _, number := range []int{0, 8} {
		if n, ok := ByNumber(recs, number); ok {
			t.Fatalf("ByNumber(%d) = %d, true; want none", number, n)
		}
	}
}
