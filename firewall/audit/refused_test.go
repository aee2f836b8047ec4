package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, e := range []Entry{
		{Time: now, Kind: "connect", Target: "proxy.golang.org:443", Allowed: true, Reason: "allowlist"},
		{Time: now, Kind: "connect", Target: "example.com:443", Allowed: false, Reason: "not in allowlist"},
		{Time: now, Kind: "http", Target: "evil.test:80", Allowed: false, Reason: "not in allowlist"},
		{Time: now, Kind: "connect", Target: "third.test:443", Allowed: false, Reason: "not in allowlist"},
	} {
		if err := l.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	tests := []struct {
		name  string
		log   string
		max   int
		want  []string
		error string
	}{
		{name: "the last two refusals", log: string(raw), max: 2, want: []string{"evil.test:80", "third.test:443"}},
		{name: "all of them", log: string(raw), max: 10, want: []string{"example.com:443", "evil.test:80", "third.test:443"}},
		{name: "an empty log", log: "", max: 3},
		{name: "a torn last line", log: strings.TrimSuffix(string(raw), "\n"), max: 3, error: "no newline"},
		{name: "not an audit log", log: "{\"hello\":1}\n", max: 3, error: "not an audit entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Refused(bytes.NewReader([]byte(tt.log)), tt.max)
			if tt.error != "" {
				if err == nil || !strings.Contains(err.Error(), tt.error) {
					t.Fatalf("Refused = %v, want %q", err, tt.error)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("Refused = %q, %v; want %d lines", got, err, len(tt.want))
			}
			for i, target := range tt.want {
				if !strings.Contains(got[i], `"target":"`+target+`"`) || !strings.Contains(got[i], `"allowed":false`) {
					t.Errorf("line %d = %s, want the refusal of %s", i, got[i], target)
				}
			}
		})
	}
}
