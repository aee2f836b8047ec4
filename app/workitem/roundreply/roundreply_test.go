package roundreply

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/wire"
)

// TestText: the reply names what a round takes and leaves out without quoting a word of
// it, keeps names and places in code spans whatever they hold, bounds its lists, and
// says what the taken text hides.
func TestText(t *testing.T) {
	many := make([]wire.ReviewComment, 25)
	for i := range many {
		many[i] = wire.ReviewComment{ID: int64(i + 1), Kind: wire.ReviewKindInline, Author: "mae", Path: "a.go", Line: i + 1, Body: "SECRET-WORDS"}
	}
	tests := []struct {
		name      string
		r         Round
		want, not []string
	}{
		{"a round", Round{Number: 1, Bound: 3, Head: strings.Repeat("a", 40), Branch: "bumper/3-1", Started: true,
			Review:  []wire.ReviewComment{{ID: 1, Kind: wire.ReviewKindReview, Author: "mae", Body: "SECRET-WORDS"}, {ID: 2, Kind: wire.ReviewKindInline, Author: "mae", Path: "w.sh", Line: 3, Body: "SECRET-WORDS"}},
			LeftOut: []wire.LeftOut{{ID: 9, Author: "eve", Association: "NONE", Reason: wire.LeftOutNotWriter}}, Waiting: 2},
			[]string{"**Revise round 1 of 3**", "`aaaaaaaaaaaa`", "`bumper/3-1`", "**Taken** (2)", "@mae's review", "@mae's comment on `w.sh:3`",
				"`eve` (none), comment 9: its author may not give Bumper commands here", "2 more comment(s) wait for the next round"},
			[]string{"SECRET-WORDS"}},
		{"nothing taken", Round{LeftOut: []wire.LeftOut{{ID: 9, Author: "bot[bot]", Reason: wire.LeftOutBot}}},
			[]string{"**No revise round starts:**", "`bot[bot]`, comment 9: a bot's"}, []string{"**Taken**"}},
		{"a path that breaks out", Round{Number: 1, Bound: 1, Started: true,
			Review: []wire.ReviewComment{{ID: 2, Kind: wire.ReviewKindInline, Author: "mae", Path: "x`\n## EVIL\n`", Line: 1}}},
			[]string{"x` ## EVIL `:1"}, []string{"\n## EVIL"}},
		{"bounded lists", Round{Number: 1, Bound: 1, Started: true, Review: many}, []string{"- …and 5 more"}, []string{"a.go:21`"}},
		{"hidden text in what was taken", Round{Number: 1, Bound: 1, Started: true, Review: many[:1], Texts: []string{"ok <!-- hidden instruction -->"}},
			[]string{"**What was taken contains text the rendered page does not show.**"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Text(tt.r)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the reply lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("the reply holds %q:\n%s", n, got)
				}
			}
		})
	}
}
