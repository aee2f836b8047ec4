package ghemu

import "testing"

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
