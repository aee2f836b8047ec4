package revision

import (
	"strings"
	"testing"
)

func TestRevision(t *testing.T) {
	a, b := Of([]byte("x")), Of([]byte("y"))
	if !Valid(a) || !Valid(b) || a == b || len(a) != len("sha256:")+64 {
		t.Fatalf("%q %q", a, b)
	}
	for _, bad := range []string{"", "sha256:0123456789abcdef", "sha256:" + strings.Repeat("g", 64),
		"sha256:" + strings.Repeat("A", 64), "md5:" + strings.Repeat("0", 64), strings.Repeat("0", 64)} {
		if Valid(bad) {
			t.Errorf("Valid(%q)", bad)
		}
	}
}

func TestIsCommitID(t *testing.T) {
	for s, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef01234567":  true,
		"0123456789ABCDEF0123456789abcdef01234567":  false,
		"0123456789abcdef0123456789abcdef0123456":   false,
		"0123456789abcdef0123456789abcdef012345678": false,
		"main": false, "": false, "0123456789abcdef0123456789abcdef0123456g": false,
	} {
		if IsCommitID(s) != want {
			t.Errorf("IsCommitID(%q) = %v", s, !want)
		}
	}
}
