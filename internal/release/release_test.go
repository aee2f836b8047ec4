package release

import "testing"

func TestIsExact(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"2.1.328", true},
		{"0.171.0", true},
		{"1.0.0-beta.2", true},
		{"1.0.0+build.7", true},
		{"1.0.0-rc.1+sha.5114f85", true},
		{"", false},
		{"latest", false},
		{"next", false},
		{"v2.1.3", false},
		{"2.1", false},
		{"^2.1.3", false},
		{"~2.1.3", false},
		{">=2.1.3", false},
		{"2.1.x", false},
		{"2.1.3 || 3.0.0", false},
		{"2.1.3\n", false},
		{" 2.1.3", false},
	} {
		t.Run(tc.v, func(t *testing.T) {
			if got := IsExact(tc.v); got != tc.want {
				t.Errorf("IsExact(%q) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}
