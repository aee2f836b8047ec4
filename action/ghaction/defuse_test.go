package ghaction

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestDefuse: "##[command]" in bumper run's output never reaches the runner whole, even
// split across writes, as an agent's output or a quoted git error would carry it; the
// "::" commands bumper itself writes pass untouched.
func TestDefuse(t *testing.T) {
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
			d := Defuse(&out)
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
	d := Defuse(&out)
	own := "::add-mask::secret\n::group::agent (round 1)\n# [not a command]\n"
	d.Write([]byte(own))
	if out.String() != own {
		t.Fatalf("bumper's own output changed: %q", out.String())
	}
}

// TestStopCommands: quoted text is framed by ::stop-commands:: with a token of its own
// each time, so text quoted once cannot resume the commands of a later quote with the
// token it saw; outside Actions nothing is written (nothing there takes commands).
func TestStopCommands(t *testing.T) {
	e, out, _ := inActionsEnv(t)
	tokens := map[string]bool{}
	for range 2 {
		out.Reset()
		resume := e.StopCommands()
		out.WriteString("::add-mask::FAIL\n")
		resume()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		token, ok := strings.CutPrefix(lines[0], "::stop-commands::")
		if !ok || len(lines) != 4 || lines[1] != "::add-mask::FAIL" || lines[2] != "" || lines[3] != "::"+token+"::" {
			t.Fatalf("quoted output %q", out.String())
		}
		if !regexp.MustCompile(`^bumper-[0-9a-f]{32}$`).MatchString(token) || tokens[token] {
			t.Fatalf("token %q: want a fresh one of 128 random bits", token)
		}
		tokens[token] = true
	}
	var plain bytes.Buffer
	New(&plain, func(string) string { return "" }).StopCommands()()
	if plain.Len() != 0 {
		t.Fatalf("outside Actions: %q", plain.String())
	}
}
