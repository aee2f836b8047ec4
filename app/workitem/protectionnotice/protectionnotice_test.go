package protectionnotice

import (
	"strings"
	"testing"
)

func TestGaps(t *testing.T) {
	app := App{Slug: "bumper-app", Known: true, ID: 7}
	good := Protection{RequiredReviews: 1, RequiredChecks: []RequiredCheck{{Name: "bumper/verdict", AppID: 7}}}
	tests := []struct {
		name     string
		p        Protection
		app      App
		reviewer bool
		want     []string // nil: no notice
	}{
		{"a review and the pinned verdict", good, app, true, nil},
		{"a review, no reviewer", Protection{RequiredReviews: 1}, app, false, nil},
		{"no review", Protection{}, app, false, []string{"`main`'s protection does not require an approving review before a merge. Bumper never merges"}},
		{"the App may bypass", Protection{RequiredReviews: 1, BypassApps: []string{"Bumper-App"}}, app, false, []string{"lets the bumper-app App bypass"}},
		{"a bypass, the App unknown", Protection{RequiredReviews: 1, BypassApps: []string{""}}, App{}, false, nil},
		{"no verdict required", Protection{RequiredReviews: 1}, app, true, []string{"does not require the `bumper/verdict` check", "with the App as its expected source"}},
		{"the verdict from any source", Protection{RequiredReviews: 1, RequiredChecks: []RequiredCheck{{Name: "bumper/verdict"}}}, app, true, []string{"from any source"}},
		{"the verdict, the App's ID unknown", Protection{RequiredReviews: 1, RequiredChecks: []RequiredCheck{{Name: "bumper/verdict"}}}, App{Known: true}, true, nil},
		{"all of it", Protection{BypassApps: []string{"bumper-app"}}, app, true, []string{"merge, and lets the bumper-app App bypass its pull request rules, and does not require the `bumper/verdict` check."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Gaps("main", tt.p, tt.app, tt.reviewer)
			if (got == "") != (tt.want == nil) {
				t.Fatalf("Gaps = %q, want a notice: %v", got, tt.want != nil)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Gaps = %q, want it to say %q", got, w)
				}
			}
		})
	}
}

func TestUnprotected(t *testing.T) {
	for _, reviewer := range []bool{false, true} {
		got := Unprotected("main", reviewer)
		if !strings.HasPrefix(got, "`main` is not protected") || strings.Contains(got, "bumper/verdict") != reviewer {
			t.Errorf("Unprotected(reviewer %v) = %q", reviewer, got)
		}
	}
}
