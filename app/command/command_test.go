package command

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Command
		ok   bool
	}{
		{"approve", "/approve", Command{Kind: Approve, Name: "approve", Args: []string{}}, true},
		{"approve with text after", "/approve\nlooks good", Command{Kind: Approve, Name: "approve", Args: []string{}}, true},
		{"leading blank lines", "\n\n  /stop  \n", Command{Kind: Stop, Name: "stop", Args: []string{}}, true},
		{"upper case", "/RETRY", Command{Kind: Retry, Name: "retry", Args: []string{}}, true},
		{"status with args", "/status please", Command{Kind: Status, Name: "status", Args: []string{"please"}}, true},
		{"long form", "/bumper approve", Command{Kind: Approve, Name: "approve", Args: []string{}}, true},
		{"bumper alone is help", "/bumper", Command{Kind: Help, Name: "bumper", Args: []string{}}, true},
		{"bumper with junk is help", "/bumper dance", Command{Kind: Help, Name: "bumper", Args: []string{"dance"}}, true},
		{"unknown", "/merge now", Command{Kind: Unknown, Name: "merge", Args: []string{"now"}}, true},
		{"not first line", "I think\n/approve", Command{}, false},
		{"mentioned in text", "please /approve this", Command{}, false},
		{"path", "/usr/bin/env", Command{}, false},
		{"lone slash", "/", Command{}, false},
		{"slash then space", "/ approve", Command{Kind: Approve, Name: "approve", Args: []string{}}, true},
		{"empty", "", Command{}, false},
		{"quoted", "> /approve", Command{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.body)
			if ok != tt.ok {
				t.Fatalf("ok=%v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got.Args == nil {
				got.Args = []string{}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.body, got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"/approve", "/bumper stop", "/x y z", "text", "/", "\n/status\n", "/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		cmd, ok := Parse(body)
		if !ok {
			if cmd.Kind != "" {
				t.Fatalf("no command but kind %q", cmd.Kind)
			}
			return
		}
		switch cmd.Kind {
		case Approve, Stop, Retry, Status, Help, Unknown:
		default:
			t.Fatalf("unexpected kind %q", cmd.Kind)
		}
		if !strings.HasPrefix(strings.TrimSpace(body), "/") {
			t.Fatalf("command found in a body whose first line does not start with '/': %q", body)
		}
		if len(cmd.Name) > maxLine || (utf8.ValidString(body) && !utf8.ValidString(cmd.Name)) {
			t.Fatalf("bad name %q", cmd.Name)
		}
	})
}
