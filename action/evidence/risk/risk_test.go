package risk_test

import (
	"testing"

	"github.com/bumperdev/bumper/action/evidence/risk"
)

func TestNote(t *testing.T) {
	tests := []struct {
		path string
		want risk.Category // "" for not flagged
	}{
		{"internal/webhook/client.go", ""},
		{"internal/webhook/client_test.go", risk.Tests},
		{"pkg/x/testdata/golden.json", risk.Tests},
		{"test/integration/run.sh", risk.Tests},
		{"tests/test_api.py", risk.Tests},
		{"app/models/user_spec.rb", risk.Tests},
		{"spec/models/user.rb", risk.Tests},
		{"src/__tests__/App.tsx", risk.Tests},
		{"src/app.test.ts", risk.Tests},
		{"web/button.spec.jsx", risk.Tests},
		{"pkg/test_utils.py", risk.Tests},
		{"src/main/java/com/acme/WidgetTest.java", risk.Tests},
		{"src/main/java/com/acme/Latest.java", ""},
		{"src/contest.go", ""},
		{"docs/testing.md", ""},
		{".github/workflows/ci.yml", risk.CIWorkflow},
		{".github/workflows/sub/dir/x.yaml", risk.CIWorkflow},
		{".github/actions/setup/action.yml", risk.CIWorkflow},
		{".github/bumper.yml", risk.BumperPolicy},
		{".github/bumper.yaml", risk.BumperPolicy},
		{".github/BUMPER.YML", risk.BumperPolicy},
		{"CODEOWNERS", risk.Codeowners},
		{".github/CODEOWNERS", risk.Codeowners},
		{"docs/CODEOWNERS", risk.Codeowners},
		{"src/CODEOWNERS", ""},
		{".github/settings.yml", risk.RepoSettings},
		{".github/dependabot.yml", ""},
		{"Makefile", risk.Build},
		{"sub/GNUmakefile", risk.Build},
		{"build/rules.mk", risk.Build},
		{"justfile", risk.Build},
		{".gitlab-ci.yml", risk.CIConfig},
		{".circleci/config.yml", risk.CIConfig},
		{".ci/run", risk.CIConfig},
		{"Jenkinsfile", risk.CIConfig},
		{"scripts/ci-test.sh", risk.CIConfig},
		{"scripts/install-deps.sh", ""},
		{".golangci.yml", risk.LintConfig},
		{"web/.eslintrc.json", risk.LintConfig},
		{".pre-commit-config.yaml", risk.LintConfig},
		{"pytest.ini", risk.TestConfig},
		{"tests/conftest.py", risk.TestConfig}, // the more specific rule wins
		{"jest.config.ts", risk.TestConfig},
		{"codecov.yml", risk.TestConfig},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			flags := risk.Note([]string{tt.path})
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

func TestNotePaths(t *testing.T) {
	flags := risk.Note([]string{
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
	if risk.Note(nil) != nil {
		t.Error("Note(nil) is not nil")
	}
}

// TestKnown: a rendering shows a flag's reason as it is only when Note wrote it; a
// bundle from elsewhere may hold any text there.
func TestKnown(t *testing.T) {
	for _, f := range risk.Note([]string{"a_test.go", ".github/workflows/ci.yml", "CODEOWNERS", "Makefile"}) {
		if !risk.Known(f.Reason) {
			t.Errorf("Note's reason %q is not known", f.Reason)
		}
	}
	for _, reason := range []string{"", "a test file", "a test file: changes what the tests check ", "<img src=x>"} {
		if risk.Known(reason) {
			t.Errorf("%q is known", reason)
		}
	}
}
