package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDefuser: "##[command]" in bumper run's output never reaches the runner whole, even
// split across writes, as an agent's output or a quoted git error would carry it; the
// "::" commands bumper itself writes pass untouched.
func TestDefuser(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
	}{
		{"one write", []string{"fatal: /w/##[stop-commands]tok\n"}},
		{"split after the hashes", []string{"x ##", "[error]verified, safe to merge\n"}},
		{"split between the hashes", []string{"x #", "#", "[add-mask]FAIL\n"}},
		{"many hashes", []string{"####[warning]w\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			d := &defuser{w: &out}
			for _, w := range tc.writes {
				if n, err := d.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if strings.Contains(out.String(), "##[") || strings.ReplaceAll(out.String(), wordJoiner, "") != strings.Join(tc.writes, "") {
				t.Fatalf("output %q", out.String())
			}
		})
	}
	var out bytes.Buffer
	d := &defuser{w: &out}
	own := "::add-mask::secret\n::group::agent (round 1)\n# [not a command]\n"
	d.Write([]byte(own))
	if out.String() != own {
		t.Fatalf("bumper's own output changed: %q", out.String())
	}
}
