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
		{"revise alone", "/revise", Command{Kind: Revise, Name: "revise", Args: []string{}}, true},
		{"revise with text", "/revise use the helper\nin util.go, please  \n",
			Command{Kind: Revise, Name: "revise", Args: []string{"use", "the", "helper"}, Text: "use the helper\nin util.go, please"}, true},
		{"steer on the next lines", "\n /Steer\n\n  Keep the API as it is.\n",
			Command{Kind: Steer, Name: "steer", Args: []string{}, Text: "Keep the API as it is."}, true},
		{"steer past the command line's bound", "/steer " + strings.Repeat("x", 300),
			Command{Kind: Steer, Name: "steer", Args: []string{strings.Repeat("x", maxLine-len("/steer "))}, Text: strings.Repeat("x", 300)}, true},
		{"long form steer", "/bumper steer  go on", Command{Kind: Steer, Name: "steer", Args: []string{"go", "on"}, Text: "go on"}, true},
		{"slash, space, revise", "/ revise now", Command{Kind: Revise, Name: "revise", Args: []string{"now"}, Text: "now"}, true},
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
		case Approve, Stop, Retry, Status, Revise, Steer, Help, Unknown:
		default:
			t.Fatalf("unexpected kind %q", cmd.Kind)
		}
		if !strings.HasPrefix(strings.TrimSpace(body), "/") {
			t.Fatalf("command found in a body whose first line does not start with '/': %q", body)
		}
		if len(cmd.Name) > maxLine || (utf8.ValidString(body) && !utf8.ValidString(cmd.Name)) {
			t.Fatalf("bad name %q", cmd.Name)
		}
		if cmd.Text != "" && (cmd.Kind != Revise && cmd.Kind != Steer || !strings.Contains(body, cmd.Text)) {
			t.Fatalf("text %q of a %s command that is not in the body", cmd.Text, cmd.Kind)
		}
	})
}
