package evidence_test

import (
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
)

func TestRiskNote(t *testing.T) {
	tests := []struct {
		path string
		want evidence.RiskCategory // "" for not flagged
	}{
		{"internal/webhook/client.go", ""},
		{"internal/webhook/client_test.go", evidence.RiskTests},
		{"pkg/x/testdata/golden.json", evidence.RiskTests},
		{"test/integration/run.sh", evidence.RiskTests},
		{"tests/test_api.py", evidence.RiskTests},
		{"app/models/user_spec.rb", evidence.RiskTests},
		{"spec/models/user.rb", evidence.RiskTests},
		{"src/__tests__/App.tsx", evidence.RiskTests},
		{"src/app.test.ts", evidence.RiskTests},
		{"web/button.spec.jsx", evidence.RiskTests},
		{"pkg/test_utils.py", evidence.RiskTests},
		{"src/main/java/com/acme/WidgetTest.java", evidence.RiskTests},
		{"src/main/java/com/acme/Latest.java", ""},
		{"src/contest.go", ""},
		{"docs/testing.md", ""},
		{".github/workflows/ci.yml", evidence.RiskCIWorkflow},
		{".github/workflows/sub/dir/x.yaml", evidence.RiskCIWorkflow},
		{".github/actions/setup/action.yml", evidence.RiskCIWorkflow},
		{".github/bumper.yml", evidence.RiskBumperPolicy},
		{".github/bumper.yaml", evidence.RiskBumperPolicy},
		{".github/BUMPER.YML", evidence.RiskBumperPolicy},
		{"CODEOWNERS", evidence.RiskCodeowners},
		{".github/CODEOWNERS", evidence.RiskCodeowners},
		{"docs/CODEOWNERS", evidence.RiskCodeowners},
		{"src/CODEOWNERS", ""},
		{".github/settings.yml", evidence.RiskRepoSettings},
		{".github/dependabot.yml", ""},
		{"Makefile", evidence.RiskBuild},
		{"sub/GNUmakefile", evidence.RiskBuild},
		{"build/rules.mk", evidence.RiskBuild},
		{"justfile", evidence.RiskBuild},
		{".gitlab-ci.yml", evidence.RiskCIConfig},
		{".circleci/config.yml", evidence.RiskCIConfig},
		{".ci/run", evidence.RiskCIConfig},
		{"Jenkinsfile", evidence.RiskCIConfig},
		{"scripts/ci-test.sh", evidence.RiskCIConfig},
		{"scripts/install-deps.sh", ""},
		{".golangci.yml", evidence.RiskLintConfig},
		{"web/.eslintrc.json", evidence.RiskLintConfig},
		{".pre-commit-config.yaml", evidence.RiskLintConfig},
		{"pytest.ini", evidence.RiskTestConfig},
		{"tests/conftest.py", evidence.RiskTestConfig}, // the more specific rule wins
		{"jest.config.ts", evidence.RiskTestConfig},
		{"codecov.yml", evidence.RiskTestConfig},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			flags := evidence.RiskNote([]string{tt.path})
			switch {
			case tt.want == "" && len(flags) != 0:
				t.Errorf("flagged: %+v", flags)
			case tt.want != "" && len(flags) != 1:
				t.Errorf("flags = %+v, want one %s", flags, tt.want)
			case tt.want != "" && (flags[0].Category != tt.want || flags[0].Reason == "" || flags[0].Path != tt.path):
				t.Errorf("flag = %+v, want %s with a reason", flags[0], tt.want)
			}
		})
	}
}

func TestRiskNotePaths(t *testing.T) {
	flags := evidence.RiskNote([]string{
		"./Makefile", "Makefile", `.github\workflows\ci.yml`, "/CODEOWNERS", "", ".", "a/../tests/x.go", "main.go",
	})
	want := []string{".github/workflows/ci.yml", "CODEOWNERS", "Makefile", "tests/x.go"}
	if len(flags) != len(want) {
		t.Fatalf("flags = %+v, want %v", flags, want)
	}
	for i, f := range flags {
		if f.Path != want[i] {
			t.Errorf("flag %d = %s, want %s (cleaned, once each, sorted)", i, f.Path, want[i])
		}
	}
	if evidence.RiskNote(nil) != nil {
		t.Error("RiskNote(nil) is not nil")
	}
}
