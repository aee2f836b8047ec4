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
