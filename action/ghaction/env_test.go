package ghaction

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// readOutputs parses a GITHUB_OUTPUT file as GitHub's runner does (name=value, or
// name<<DELIM, the value's lines, DELIM).
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if name, delim, ok := strings.Cut(l, "<<"); ok && !strings.Contains(name, "=") {
			var v []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				v = append(v, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("no closing delimiter %q in %q", delim, raw)
			}
			out[name] = strings.Join(v, "\n")
			continue
		}
		name, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("line %q of GITHUB_OUTPUT is neither form", l)
		}
		out[name] = v
	}
	return out
}

func inActionsEnv(t *testing.T) (*Env, *bytes.Buffer, map[string]string) {
	dir := t.TempDir()
	env := map[string]string{"GITHUB_ACTIONS": "true",
		"GITHUB_OUTPUT": filepath.Join(dir, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary")}
	for _, f := range []string{env["GITHUB_OUTPUT"], env["GITHUB_STEP_SUMMARY"]} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	return New(&out, func(k string) string { return env[k] }), &out, env
}

func TestEnvInActions(t *testing.T) {
	e, out, env := inActionsEnv(t)
	if !e.InActions() {
		t.Fatal("GITHUB_ACTIONS=true is not Actions")
	}
	e.Group("token exchange")
	e.AddMask("ghs_installationtoken")
	e.AddMask("line1\nline2\n")
	e.AddMask("")
	e.Group("sandbox") // ends the open group first
	e.Warningf("KVM does not work here (%s)", "canary hung")
	e.Errorf("two\nlines")
	e.Noticef("50%% done")
	e.EndGroup()
	e.EndGroup() // nothing open: nothing written
	want := strings.Join([]string{
		"::group::token exchange",
		"::add-mask::ghs_installationtoken",
		"::add-mask::line1",
		"::add-mask::line2",
		"::endgroup::",
		"::group::sandbox",
		"::warning::KVM does not work here (canary hung)",
		"::error::two%0Alines",
		"::notice::50%25 done",
		"::endgroup::",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("workflow commands:\n%s\nwant\n%s", out.String(), want)
	}

	if err := e.SetOutputs(Outputs{PullRequest: 7, EvidenceDigest: "sha256:" + strings.Repeat("a", 64), CostMicroUSD: 1234567, Outcome: "success"}); err != nil {
		t.Fatal(err)
	}
	got := readOutputs(t, env["GITHUB_OUTPUT"])
	wantOut := map[string]string{OutputPullRequest: "7", OutputEvidenceDigest: "sha256:" + strings.Repeat("a", 64), OutputCostUSD: "1.234567", OutputOutcome: "success"}
	if fmt.Sprint(got) != fmt.Sprint(wantOut) {
		t.Errorf("outputs %v, want %v", got, wantOut)
	}
	if err := e.SetOutput(OutputOutcome, "success\nx=y"); err == nil {
		t.Error("a value with a line break was accepted: it could set another output")
	}
	if err := e.SetOutput("a=b", "v"); err == nil {
		t.Error("a name with = was accepted")
	}

	if err := e.AddSummary("## Bumper run\n\nok"); err != nil {
		t.Fatal(err)
	}
	if err := e.AddSummary("more"); err != nil {
		t.Fatal(err)
	}
	if s, _ := os.ReadFile(env["GITHUB_STEP_SUMMARY"]); string(s) != "## Bumper run\n\nok\nmore\n" {
		t.Errorf("summary %q", s)
	}
}

// TestSummaryCut: GitHub shows nothing of a summary over 1 MiB, so what would not fit
// is cut, on a character boundary, with a note.
func TestSummaryCut(t *testing.T) {
	e, _, env := inActionsEnv(t)
	big := strings.Repeat("é", MaxSummaryBytes) // 2 MiB
	if err := e.AddSummary(big); err != nil {
		t.Fatal(err)
	}
	s, _ := os.ReadFile(env["GITHUB_STEP_SUMMARY"])
	if len(s) > MaxSummaryBytes || !utf8.Valid(s) || !strings.Contains(string(s), "summary cut here") {
		t.Fatalf("summary of %d bytes (valid UTF-8 %v), want at most %d with a note", len(s), utf8.Valid(s), MaxSummaryBytes)
	}
	if err := e.AddSummary("more"); err == nil {
		t.Error("a full summary took more")
	}
}

// TestEnvOutsideActions: by hand, nothing is masked (it would print the secret), groups
// and annotations are plain lines, outputs are printed, the summary is skipped.
func TestEnvOutsideActions(t *testing.T) {
	var out bytes.Buffer
	e := New(&out, func(string) string { return "" })
	if e.InActions() {
		t.Fatal("no GITHUB_ACTIONS, yet in Actions")
	}
	e.Group("preflight")
	e.AddMask("ghs_secret")
	e.Errorf("no root")
	e.Warningf("low disk")
	e.EndGroup()
	if err := e.SetOutputs(Outputs{Outcome: "failure"}); err != nil {
		t.Fatal(err)
	}
	if err := e.AddSummary("# summary"); err != nil {
		t.Fatal(err)
	}
	want := "==> preflight\nerror: no root\nwarning: low disk\npull_request=\nevidence_digest=\ncost_usd=0.00\noutcome=failure\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant\n%s", out.String(), want)
	}
}

func TestFormatUSD(t *testing.T) {
	for micro, want := range map[int64]string{0: "0.00", 1500000: "1.50", 123456: "0.123456", 10: "0.00001", 42000000: "42.00", -5000: "-0.005"} {
		if got := FormatUSD(micro); got != want {
			t.Errorf("FormatUSD(%d) = %q, want %q", micro, got, want)
		}
	}
}

func TestReadContext(t *testing.T) {
	env := map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_SERVER_URL": "https://github.example.com/", "GITHUB_API_URL": "https://github.example.com/api/v3",
		"GITHUB_REPOSITORY": "acme/widgets", "GITHUB_RUN_ID": "991", "GITHUB_RUN_ATTEMPT": "2", "GITHUB_RUN_NUMBER": "5",
		"GITHUB_WORKFLOW": "bumper-run", "GITHUB_WORKFLOW_REF": "acme/widgets/.github/workflows/bumper-run.yml@refs/heads/main",
		"GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_ACTOR": "bumper[bot]", "GITHUB_REF": "refs/heads/main",
		"GITHUB_SHA": strings.Repeat("1", 40), "GITHUB_JOB": "run", "RUNNER_NAME": "bumper-runner-1", "RUNNER_OS": "Linux",
		"RUNNER_ARCH": "X64", "RUNNER_TEMP": "/r/_temp",
	}
	a, _ := action(env)
	c, err := ReadContext(a)
	if err != nil {
		t.Fatal(err)
	}
	want := Context{InActions: true, ServerURL: "https://github.example.com", APIURL: "https://github.example.com/api/v3",
		Repository: "acme/widgets", RunID: "991", RunAttempt: "2", RunNumber: "5", Workflow: "bumper-run",
		WorkflowRef: "acme/widgets/.github/workflows/bumper-run.yml@refs/heads/main", EventName: "workflow_dispatch",
		Actor: "bumper[bot]", Ref: "refs/heads/main", SHA: strings.Repeat("1", 40), Job: "run", RunnerName: "bumper-runner-1",
		RunnerOS: "Linux", RunnerArch: "X64", RunnerTemp: "/r/_temp"}
	if c != want {
		t.Fatalf("ReadContext =\n%+v\nwant\n%+v", c, want)
	}
	if got := c.RunURL(); got != "https://github.example.com/acme/widgets/actions/runs/991/attempts/2" {
		t.Errorf("RunURL %q", got)
	}

	a, _ = action(map[string]string{})
	c, err = ReadContext(a)
	if err != nil || c.InActions || c.RunURL() != "" || c.APIURL != "https://api.github.com" {
		t.Errorf("outside Actions: %+v, %v", c, err)
	}
	a, _ = action(map[string]string{"GITHUB_RUN_ID": "x"})
	if _, err := ReadContext(a); err == nil {
		t.Error("a run ID that is not a number was accepted")
	}
}
