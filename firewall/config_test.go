package firewall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
)

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig("config.example.yml")
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if c.Limits.IdleTimeout != time.Minute || c.Gateway.PushRef != "refs/heads/bumper/12-1" || c.Budget.USD != 5 || len(c.Allow) != 6 ||
		c.Gateway.Repository != "acme/widgets" || c.Gateway.RepositoryID != 123456789 {
		t.Fatalf("decoded %+v", c)
	}
	dir := t.TempDir()

	// The example builds its gateways once its secret files exist; without the run's
	// repository it does not, and says which key to set.
	al, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s3cret\n"), 0o600)
	c.Gateway.TokenFile, c.Gateway.AnthropicKeyFile = secret, secret
	t.Setenv(EnvOpenAIKey, "sk-openai")
	gw, _, err := buildGateway(c, al)
	if err != nil || gw == nil {
		t.Fatalf("the example's gateways: %v", err)
	}
	gw.Close()
	c.Gateway.Repository = ""
	if _, _, err := buildGateway(c, al); err == nil || !strings.Contains(err.Error(), "gateways.repository") {
		t.Fatalf("gateways without the run's repository: %v, want an error naming gateways.repository", err)
	}

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
