package actions

import "testing"

func TestParseFileCommand(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"name=value", "a=1\nb=two words\n", map[string]string{"a": "1", "b": "two words"}, ""},
		{"empty value and empty lines", "\na=\n\n", map[string]string{"a": ""}, ""},
		{"the value keeps later = and <<", "a=b=c<<d\n", map[string]string{"a": "b=c<<d"}, ""},
		{"a later name wins", "a=1\na=2\n", map[string]string{"a": "2"}, ""},
		{"no final newline", "a=1", map[string]string{"a": "1"}, ""},
		{"CRLF", "a=1\r\nb<<E\r\nx\r\ny\r\nE\r\n", map[string]string{"a": "1", "b": "x\r\ny"}, ""},
		{"heredoc", "notes<<EOF\nline one\nline=two\n\nEOF\nafter=1\n", map[string]string{"notes": "line one\nline=two\n", "after": "1"}, ""},
		{"heredoc before =", "k<<A=B\nv\nA=B\n", map[string]string{"k": "v"}, ""},
		{"empty heredoc", "k<<EOF\nEOF\n", map[string]string{"k": ""}, ""},
		{"delimiter at the end of the file", "k<<EOF\nv\nEOF", map[string]string{"k": "v"}, ""},
		{"no = nor <<", "just words\n", nil, "Invalid format 'just words'"},
		{"empty name", "=v\n", nil, "Invalid format '=v'. Name must not be empty"},
		{"empty delimiter", "k<<\nv\n", nil, "Invalid format 'k<<'. Name must not be empty and delimiter must not be empty"},
		{"missing delimiter", "k<<EOF\nv\n", nil, "Invalid value. Matching delimiter not found 'EOF'"},
		{"value line without newline", "k<<EOF\nv", nil, "Invalid value. EOF marker missing new line."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFileCommand(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestInputEnvName(t *testing.T) {
	for in, want := range map[string]string{"work_item": "INPUT_WORK_ITEM", "my input": "INPUT_MY_INPUT",
		"with-hyphen": "INPUT_WITH-HYPHEN", "Stage": "INPUT_STAGE"} {
		if got := inputEnvName(in); got != want {
			t.Errorf("inputEnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRunnerRefusesBadOptions(t *testing.T) {
	for _, r := range []Runner{{}, {Command: []string{""}}, {Command: []string{"true"}, Parallel: -1},
		{Command: []string{"true"}, Env: []string{"NOEQUALS"}}, {Command: []string{"true"}, Env: []string{"=v"}}} {
		if _, err := New(Options{Runner: &r, StateDir: t.TempDir()}); err == nil {
			t.Errorf("New accepted runner %+v", r)
		}
	}
}
