package ghemu

import (
	"net/http/httptest"
	"testing"
)

func TestIsWebPathLeavesOtherSurfacesAlone(t *testing.T) {
	tests := []struct {
		path string
		web  bool
	}{
		{"/", true},
		{"/acme", true},
		{"/acme/widgets", true},
		{"/acme/widgets/pull/1", true},
		{"/acme/widgets/pull/1.diff", true},
		{"/repos/acme/widgets", false},
		{"/app", false},
		{"/app/installations", false},
		{"/installation/repositories", false},
		{"/rate_limit", false},
		{"/acme/widgets.git/info/refs", false},
		{"/.well-known/jwks", false},
		{"/_emulator/repos/acme/widgets/actions/runs", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if got := isWebPath(tc.path); got != tc.web {
				t.Errorf("isWebPath(%q) = %v, want %v", tc.path, got, tc.web)
			}
		})
	}
}

// TestIsWebFormLeavesTheAPIAlone: the web view's forms take only their own POSTs; the
// REST API's routes, which look alike under /repos/, stay the API's.
func TestIsWebFormLeavesTheAPIAlone(t *testing.T) {
	tests := []struct {
		method, path string
		form         bool
	}{
		{"POST", "/session", true},
		{"POST", "/logout", true},
		{"POST", "/acme/widgets/issues/1/comments", true},
		{"POST", "/acme/widgets/pull/2/comments", true},
		{"POST", "/acme/widgets/pull/2/review-comments", true},
		{"POST", "/acme/widgets/pull/2/reviews", true},
		{"POST", "/acme/widgets/pull/2/threads/1009/replies", true},
		{"POST", "/acme/widgets/pull/2/threads/1009/resolution", true},
		{"POST", "/acme/widgets/pull/2/merge", true},
		{"POST", "/acme/widgets/pull/2/update-branch", true},
		{"POST", "/repos/acme/widgets/issues/1/comments", false},
		{"POST", "/repos/acme/widgets/pulls/2/reviews", false},
		{"PUT", "/acme/widgets/pull/2/merge", false},
		{"GET", "/acme/widgets/pull/2/merge", false},
		{"POST", "/acme/widgets/pull/2", false},
		{"POST", "/acme/widgets/pull/x/merge", false},
		{"POST", "/acme/widgets.git/git-receive-pack", false},
		{"POST", "/settings/apps/new", false},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if got := isWebForm(r); got != tc.form {
				t.Errorf("isWebForm = %v, want %v", got, tc.form)
			}
		})
	}
}
