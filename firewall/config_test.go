package firewall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig("testdata/firewall.example.yml")
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if c.Limits.IdleTimeout != time.Minute || c.Gateway.PushRef != "refs/heads/bumper/12-1" || c.Budget.USD != 5 || len(c.Allow) != 6 {
		t.Fatalf("decoded %+v", c)
	}
	dir := t.TempDir()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "listen: x\nallow_list: [a]\n", "field allow_list not found"},
		{"wrong type", "limits:\n  idle_timeout: soon\n", "line 2: cannot unmarshal"},
		{"nested unknown", "gateways:\n  token: ghs_x\n", "field token not found"},
		{"empty file", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			_, err := LoadConfig(p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
