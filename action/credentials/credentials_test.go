package credentials

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/firewall/credential"
)

// hostFile writes a credentials file and its value files with the given modes.
func hostFile(t *testing.T, yaml string, fileMode, valueMode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	v := filepath.Join(dir, "npm.token")
	if err := os.WriteFile(v, []byte("npm_REAL_0123456789\n"), valueMode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(v, valueMode)
	p := filepath.Join(dir, "credentials.yml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(yaml, "VALUE", v)), fileMode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, fileMode)
	return p
}

const goodFile = `version: 1
credentials:
  - name: npm-corp
    hosts: [npm.corp.example, artifacts.corp.example/npm]
    auth: bearer
    file: VALUE
    repositories: [acme/web, tools/*]
`

func TestLoadAndGrant(t *testing.T) {
	h, err := Load(hostFile(t, goodFile, 0o600, 0o400))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		repo  string
		names []string
		want  string // "" granted
	}{
		{"acme/web", []string{"npm-corp"}, ""},
		{"ACME/Web", []string{"npm-corp"}, ""},
		{"tools/anything", []string{"npm-corp"}, ""},
		{"acme/api", []string{"npm-corp"}, `not granted to acme/api`},
		{"acme/web-evil", []string{"npm-corp"}, `not granted`},
		{"toolsx/a", []string{"npm-corp"}, `not granted`},
		{"acme/web", []string{"pypi"}, `does not declare`},
		{"acme/api", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.repo+strings.Join(tc.names, ","), func(t *testing.T) {
			got, err := h.Grant(tc.repo, tc.names)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Grant: %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || len(got) != len(tc.names) {
				t.Fatalf("Grant: %v %v", got, err)
			}
			for _, c := range got {
				if c.Value != "npm_REAL_0123456789" || !strings.HasPrefix(c.Placeholder, credential.PlaceholderPrefix+"npm-corp-") || len(c.Hosts) != 2 {
					t.Fatalf("granted %+v", c)
				}
			}
		})
	}
	var none *Host
	if _, err := none.Grant("acme/web", []string{"npm-corp"}); err == nil || !strings.Contains(err.Error(), Env) {
		t.Fatalf("no file: %v", err)
	}
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name            string
		yaml            string
		fileMode, vMode os.FileMode
		want            string
	}{
		{"file readable by others", goodFile, 0o644, 0o600, "chmod 600"},
		{"value readable by the group", goodFile, 0o600, 0o640, "chmod 600"},
		{"no version", strings.Replace(goodFile, "version: 1\n", "", 1), 0o600, 0o600, "version: 1"},
		{"unknown key", goodFile + "    scope: all\n", 0o600, 0o600, "field scope not found"},
		{"no repositories", strings.Replace(goodFile, "    repositories: [acme/web, tools/*]\n", "", 1), 0o600, 0o600, "repositories is empty"},
		{"wildcard owner", strings.Replace(goodFile, "acme/web", "'*/*'", 1), 0o600, 0o600, "owner/name or owner/*"},
		{"wildcard host", strings.Replace(goodFile, "npm.corp.example,", "'*.corp.example',", 1), 0o600, 0o600, "wildcard"},
		{"no file", strings.Replace(goodFile, "    file: VALUE\n", "", 1), 0o600, 0o600, "file is missing"},
		{"bad auth", strings.Replace(goodFile, "bearer", "digest", 1), 0o600, 0o600, "not one of"},
		{"twice", goodFile + strings.TrimPrefix(goodFile, "version: 1\ncredentials:\n"), 0o600, 0o600, "declared twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load(hostFile(t, tc.yaml, tc.fileMode, tc.vMode)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want %q", err, tc.want)
			}
		})
	}
}
