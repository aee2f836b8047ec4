package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testKeyPEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"

func TestExampleConfigParses(t *testing.T) {
	raw, err := os.ReadFile("config.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, []byte(testKeyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BUMPER_RUN_TOKEN_KEY": strings.Repeat("ab", 32), "BUMPER_PRIVATE_KEY_FILE": keyFile}
	c, err := ParseConfig(raw, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
	if c.GitHub.App.IntegrationID != 4242 || c.Bumper.Workflow != "bumper-run.yml" || c.GitHub.App.PrivateKey != testKeyPEM ||
		c.Server.MetricsAddress != "127.0.0.1:9090" {
		t.Fatalf("parsed %+v", c)
	}
}

func TestParseConfig(t *testing.T) {
	base := "github:\n  app:\n    integration_id: 7\n    webhook_secret: s\n    private_key: |\n      -----BEGIN RSA PRIVATE KEY-----\n      x\n      -----END RSA PRIVATE KEY-----\nbumper:\n  run_token_key: " + strings.Repeat("cd", 32) + "\n"
	tests := []struct {
		name, yaml string
		env        map[string]string
		wantErr    string
		check      func(t *testing.T, c Config)
	}{
		{"minimal gets defaults", base, nil, "", func(t *testing.T, c Config) {
			if c.Server.Address != "127.0.0.1:8080" || c.Bumper.TriggerLabel != "agent:implement" || len(c.Bumper.TokenPermissions) != 4 {
				t.Fatalf("defaults: %+v", c)
			}
		}},
		{"environment overrides", base, map[string]string{"BUMPER_GITHUB_APP_WEBHOOK_SECRET": "from-env",
			"BUMPER_GITHUB_APP_INTEGRATION_ID": "99", "BUMPER_ADDRESS": ":9999"}, "", func(t *testing.T, c Config) {
			if c.GitHub.App.WebhookSecret != "from-env" || c.GitHub.App.IntegrationID != 99 || c.Server.Address != ":9999" {
				t.Fatalf("env not applied: %+v", c)
			}
		}},
		{"unknown key", base + "bumper_typo: 1\n", nil, "field bumper_typo not found", nil},
		{"nested unknown key", strings.Replace(base, "bumper:\n", "bumper:\n  workflw: x.yml\n", 1), nil, "field workflw not found", nil},
		{"no secret", strings.Replace(base, "webhook_secret: s", "webhook_secret: \"\"", 1), nil, "webhook_secret is required", nil},
		{"bad app id from env", base, map[string]string{"BUMPER_GITHUB_APP_INTEGRATION_ID": "x"}, "integration_id", nil},
		{"short run key", strings.Replace(base, strings.Repeat("cd", 32), "abcd", 1), nil, "use at least 32", nil},
		{"no run key", strings.Replace(base, "  run_token_key: "+strings.Repeat("cd", 32)+"\n", "", 1), nil, "openssl rand", nil},
		{"forbidden token permission", base + "  token_permissions: {administration: write}\n", nil, "may not be given to a run", nil},
		{"bad permission level", base + "  token_permissions: {contents: admin}\n", nil, "use read or write", nil},
		{"workflow path", base + "  workflow: ../evil.yml\n", nil, "must be a file name", nil},
		{"api url without slash", base, map[string]string{"BUMPER_GITHUB_V3_API_URL": "https://ghe.example/api/v3"}, "must end with '/'", nil},
		{"api url without a scheme", base, map[string]string{"BUMPER_GITHUB_V3_API_URL": "api.github.com/"}, "must be an https:// URL", nil},
		{"api url of another scheme", base, map[string]string{"BUMPER_GITHUB_V3_API_URL": "ftp://ghe.example/api/v3/"}, "must be an https:// URL", nil},
		{"bad log level", base + "log: {level: loud}\n", nil, "log.level", nil},
		{"metrics on the main listener by default", base, nil, "", func(t *testing.T, c Config) {
			if c.Server.MetricsAddress != "" {
				t.Fatalf("metrics_address %q", c.Server.MetricsAddress)
			}
		}},
		{"metrics address from the environment", base, map[string]string{"BUMPER_METRICS_ADDRESS": "127.0.0.1:9191"}, "", func(t *testing.T, c Config) {
			if c.Server.MetricsAddress != "127.0.0.1:9191" {
				t.Fatalf("metrics_address %q", c.Server.MetricsAddress)
			}
		}},
		{"metrics address is the webhook one", base + "server: {address: \":8080\", metrics_address: \":8080\"}\n", nil, "leave it empty", nil},
		{"approve window and rotation", base + "  approve_window: 30m\n  previous_run_token_keys: [" + strings.Repeat("ab", 32) + "]\n", nil, "", func(t *testing.T, c Config) {
			prev, err := c.PreviousKeyBytes()
			if c.Bumper.ApproveWindow.Minutes() != 30 || err != nil || len(prev) != 1 {
				t.Fatalf("parsed %+v (%v)", c.Bumper, err)
			}
		}},
		{"default approve window", base, nil, "", func(t *testing.T, c Config) {
			if c.Bumper.ApproveWindow.Minutes() != 10 {
				t.Fatalf("approve window %v", c.Bumper.ApproveWindow)
			}
		}},
		{"negative approve window", base + "  approve_window: -1m\n", nil, "approve_window", nil},
		{"daily limits", base + "  limits: {repo_daily_usd: 5, installation_daily_usd: 50.5, repo_daily_items: 10, ledger_repository: budgets}\n", nil, "", func(t *testing.T, c Config) {
			l := c.Bumper.Limits.workitemLimits()
			if l.RepoDailyMicroUSD != 5_000_000 || l.InstallationDailyMicroUSD != 50_500_000 || l.RepoDailyItems != 10 || c.Bumper.Limits.LedgerRepository != "budgets" {
				t.Fatalf("limits %+v", c.Bumper.Limits)
			}
		}},
		{"negative daily cap", base + "  limits: {repo_daily_usd: -1}\n", nil, "repo_daily_usd", nil},
		{"not-a-number daily cap", base + "  limits: {installation_daily_usd: .nan}\n", nil, "installation_daily_usd", nil},
		{"negative item cap", base + "  limits: {repo_daily_items: -2}\n", nil, "repo_daily_items", nil},
		{"ledger repository with an owner", base + "  limits: {ledger_repository: acme/.github}\n", nil, "ledger_repository", nil},
		{"default redelivery", base, nil, "", func(t *testing.T, c Config) {
			if c.Server.RedeliverInterval.Minutes() != 5 || c.Server.RedeliverWindow.Hours() != 3 {
				t.Fatalf("redelivery every %v over %v", c.Server.RedeliverInterval, c.Server.RedeliverWindow)
			}
		}},
		{"redelivery off", base + "server: {redeliver_interval: 0s, redeliver_window: 0s}\n", nil, "", func(t *testing.T, c Config) {
			if c.Server.RedeliverInterval != 0 {
				t.Fatalf("redelivery every %v", c.Server.RedeliverInterval)
			}
		}},
		{"negative redeliver interval", base + "server: {redeliver_interval: -1m}\n", nil, "redeliver_interval", nil},
		{"redeliver window beyond GitHub's", base + "server: {redeliver_window: 100h}\n", nil, "redeliver_window", nil},
		{"redeliver window shorter than the interval", base + "server: {redeliver_interval: 1h, redeliver_window: 10m}\n", nil, "redeliver_window", nil},
		{"short previous key", base + "  previous_run_token_keys: [abcd]\n", nil, "previous_run_token_keys[0]", nil},
		// A Kubernetes Secret made with --from-file of setup's files keeps their newline,
		// and secretKeyRef hands it over in the variable.
		{"secrets from files keep no newline", base, map[string]string{"BUMPER_GITHUB_APP_WEBHOOK_SECRET": "from-file\n",
			"BUMPER_RUN_TOKEN_KEY": strings.Repeat("ef", 32) + "\n", "BUMPER_ADDRESS": " :9999\n"}, "", func(t *testing.T, c Config) {
			if c.GitHub.App.WebhookSecret != "from-file" || c.Bumper.RunTokenKey != strings.Repeat("ef", 32) || c.Server.Address != ":9999" {
				t.Fatalf("not trimmed: secret %q, run key %q, address %q", c.GitHub.App.WebhookSecret, c.Bumper.RunTokenKey, c.Server.Address)
			}
		}},
		{"secrets in block scalars keep no newline", strings.Replace(base, "webhook_secret: s", "webhook_secret: |\n      s", 1) +
			"  previous_run_token_keys:\n    - |\n      " + strings.Repeat("ab", 32) + "\n", nil, "", func(t *testing.T, c Config) {
			if c.GitHub.App.WebhookSecret != "s" || c.Bumper.PreviousRunTokenKeys[0] != strings.Repeat("ab", 32) {
				t.Fatalf("not trimmed: secret %q, previous key %q", c.GitHub.App.WebhookSecret, c.Bumper.PreviousRunTokenKeys[0])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.yaml), func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestPrivateKeyFilePath: a relative bumper.private_key_file in the file is relative to
// the file's directory, so setup's directory works wherever it is copied;
// BUMPER_PRIVATE_KEY_FILE, given at start, stays relative to the working directory.
func TestPrivateKeyFilePath(t *testing.T) {
	conf := t.TempDir()
	cwd := t.TempDir()
	t.Chdir(cwd)
	const other = "-----BEGIN RSA PRIVATE KEY-----\nMIIC\n-----END RSA PRIVATE KEY-----\n"
	for path, pem := range map[string]string{filepath.Join(conf, "app-private-key.pem"): testKeyPEM,
		filepath.Join(cwd, "env.pem"): other, filepath.Join(conf, "abs.pem"): other} {
		if err := os.WriteFile(path, []byte(pem), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, keyFile, envFile, want string
	}{
		{"relative to the configuration's directory", "app-private-key.pem", "", testKeyPEM},
		{"absolute", filepath.Join(conf, "abs.pem"), "", other},
		{"from the environment, relative to the working directory", "app-private-key.pem", "env.pem", other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "github:\n  app:\n    integration_id: 7\n    webhook_secret: s\nbumper:\n  private_key_file: " + tt.keyFile +
				"\n  run_token_key: " + strings.Repeat("cd", 32) + "\n"
			path := filepath.Join(conf, "serve.yml")
			if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.envFile != "" {
				t.Setenv("BUMPER_PRIVATE_KEY_FILE", tt.envFile)
			}
			c, err := LoadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.GitHub.App.PrivateKey != tt.want {
				t.Errorf("read the key %q, want %q", c.GitHub.App.PrivateKey, tt.want)
			}
		})
	}
}
