package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/fidelity"
)

// runnerScript stands for a workflow's step. What it does depends on the stage input:
// it always prints its directory, its PID and the environment it was started with
// ("env: K=V"; from /proc, since sh drops names such as INPUT_WITH-HYPHEN), then
// fails, sleeps, ignores signals, writes a malformed output, or (any other stage)
// writes outputs in both forms and a summary, keeps the event payload and fetches an
// OIDC token with curl when the job may.
const runnerScript = `#!/bin/sh
set -e
echo "pwd=$(pwd)"
echo "pid=$$"
tr '\0' '\n' < /proc/$$/environ | sort | sed 's/^/env: /'
case "$INPUT_STAGE" in
fail)
  echo "about to fail" >&2
  exit 3 ;;
sleep)
  echo "sleeping"
  exec sleep 600 ;;
stubborn)
  trap '' INT TERM
  echo "sleeping"
  while :; do sleep 0.05; done ;;
badoutput)
  echo "no equals sign" >> "$GITHUB_OUTPUT" ;;
*)
  echo "greeting=hello world" >> "$GITHUB_OUTPUT"
  printf 'notes<<EOF_x\nline one\nline=two\nEOF_x\n' >> "$GITHUB_OUTPUT"
  echo "stage=$INPUT_STAGE" >> "$GITHUB_OUTPUT"
  printf '### Done\n\nstage %s\n' "$INPUT_STAGE" >> "$GITHUB_STEP_SUMMARY"
  cp "$GITHUB_EVENT_PATH" event.json
  if [ -n "$ACTIONS_ID_TOKEN_REQUEST_URL" ]; then
    curl -sSf -H "Authorization: Bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=bumper" > "$RUNNER_TEMP/token.json"
    echo "id_token=$(sed -n 's/.*"value":"\([^"]*\)".*/\1/p' "$RUNNER_TEMP/token.json")" >> "$GITHUB_OUTPUT"
  fi
  echo "done" ;;
esac
`

// plainWorkflow has no name, no permissions (so no OIDC token), a job with another id
// and a timeout, and inputs with an underscore and a hyphen.
const plainWorkflow = `on:
  workflow_dispatch:
    inputs:
      stage: {required: true}
      my_input: {default: "mine"}
      with-hyphen: {default: "h"}
jobs:
  build:
    runs-on: ubuntu-latest
    timeout-minutes: 5
    steps:
      - run: "true"
`

// runnerEmulator starts a checked emulator whose local runner runs runnerScript, with
// plain.yml beside the default workflow, and webhooks going to a receiver.
func runnerEmulator(t *testing.T, rn *ghemu.Runner) (*ghemu.Emulator, *emutest.Receiver) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "step.sh")
	if err := os.WriteFile(script, []byte(runnerScript), 0o700); err != nil {
		t.Fatal(err)
	}
	seed := ghemu.DefaultSeed()
	seed.Repositories[0].Files[".github/workflows/plain.yml"] = plainWorkflow
	opts := ghemu.Options{Seed: seed, WebhookSecret: emutest.HookSecret}
	if rn != nil {
		rn.Command = []string{"/bin/sh", script}
		if rn.KillGrace == 0 {
			rn.KillGrace = 200 * time.Millisecond
		}
		opts.Runner = rn
	}
	rc, url := emutest.NewReceiver(t, 0)
	opts.WebhookURL = url
	return emutest.New(t, opts), rc
}

func stageInputs(stage string) map[string]any {
	return map[string]any{"work_item": "acme/widgets#1", "attempt": "2", "nonce": "n-1", "stage": stage}
}

// logEnv reads the "env: K=V" lines the script printed.
func logEnv(log string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		if kv, ok := strings.CutPrefix(line, "env: "); ok {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
	}
	return env
}

// waitLog waits until the run's log contains want.
func waitLog(t *testing.T, e *ghemu.Emulator, id int64, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := e.RunLog(org, repo, id)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d's log never showed %q:\n%s", id, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hookSeq lists the workflow_run and workflow_job webhooks of one run, with the
// conclusion of completed ones ("run:completed:success").
func hookSeq(t *testing.T, e *ghemu.Emulator, rc *emutest.Receiver, id int64) []string {
	t.Helper()
	if err := e.WaitWebhooks(emutest.Context(t)); err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, ev := range rc.Got() {
		switch p := ev.Payload.(type) {
		case *github.WorkflowRunEvent:
			if p.GetWorkflowRun().GetID() == id {
				s := "run:" + p.GetAction()
				if c := p.GetWorkflowRun().GetConclusion(); c != "" {
					s += ":" + c
				}
				seq = append(seq, s)
			}
		case *github.WorkflowJobEvent:
			if p.GetWorkflowJob().GetRunID() == id {
				s := "job:" + p.GetAction()
				if c := p.GetWorkflowJob().GetConclusion(); c != "" {
					s += ":" + c
				}
				seq = append(seq, s)
			}
		}
	}
	return seq
}

func started(conclusion string) []string {
	return []string{"run:requested", "job:queued", "run:in_progress", "job:in_progress",
		"job:completed:" + conclusion, "run:completed:" + conclusion}
}

func TestRunnerExecutesDispatchedRuns(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the step fetches its OIDC token with it")
	}
	t.Setenv("GITHUB_HEAD_REF", "leaked-from-outer-ci")
	t.Setenv("RUNNER_DEBUG", "1")
	t.Setenv("CI", "false")
	e, rc := runnerEmulator(t, &ghemu.Runner{Env: []string{"EXTRA=from-runner-env", "GITHUB_SHA=not-overridden"}})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	hooks, err := fidelity.LoadWebhooks()
	if err != nil {
		t.Fatal(err)
	}
	provider, err := oidc.NewProvider(ctx, e.OIDCIssuerURL())
	if err != nil {
		t.Fatal(err)
	}
	arch := map[string]string{"amd64": "X64", "arm64": "ARM64", "386": "X86", "arm": "ARM"}[runtime.GOARCH]

	tests := []struct {
		name       string
		workflow   string
		inputs     map[string]any
		conclusion string
		exit       int
		log        []string          // in the job log
		outputs    map[string]string // exactly (id_token aside)
		summary    string
		env        map[string]string // exact values, beside the common ones
		noEnv      []string          // must not be set
	}{
		{
			name: "success with outputs, summary and an OIDC token", workflow: ghemu.DefaultWorkflow,
			inputs: stageInputs("implement"), conclusion: "success", exit: 0,
			log:     []string{"done\n"},
			outputs: map[string]string{"greeting": "hello world", "notes": "line one\nline=two", "stage": "implement"},
			summary: "### Done\n\nstage implement\n",
			env: map[string]string{"GITHUB_WORKFLOW": "bumper-run", "GITHUB_JOB": "run",
				"GITHUB_WORKFLOW_REF": "acme/widgets/.github/workflows/bumper-run.yml@refs/heads/main",
				"INPUT_WORK_ITEM":     "acme/widgets#1", "INPUT_ATTEMPT": "2", "INPUT_NONCE": "n-1", "INPUT_STAGE": "implement"},
		},
		{
			name: "a workflow without id-token: write gets no OIDC variables", workflow: "plain.yml",
			inputs: map[string]any{"stage": "plain"}, conclusion: "success", exit: 0,
			outputs: map[string]string{"greeting": "hello world", "notes": "line one\nline=two", "stage": "plain"},
			summary: "### Done\n\nstage plain\n",
			env: map[string]string{"GITHUB_WORKFLOW": ".github/workflows/plain.yml", "GITHUB_JOB": "build",
				"GITHUB_WORKFLOW_REF": "acme/widgets/.github/workflows/plain.yml@refs/heads/main",
				"INPUT_STAGE":         "plain", "INPUT_MY_INPUT": "mine", "INPUT_WITH-HYPHEN": "h"},
			noEnv: []string{"ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "INPUT_WORK_ITEM"},
		},
		{
			name: "a non-zero exit fails the run", workflow: ghemu.DefaultWorkflow,
			inputs: stageInputs("fail"), conclusion: "failure", exit: 3,
			log: []string{"about to fail\n", "##[error]Process completed with exit code 3.\n"},
		},
		{
			name: "a malformed GITHUB_OUTPUT fails the run", workflow: ghemu.DefaultWorkflow,
			inputs: stageInputs("badoutput"), conclusion: "failure", exit: 0,
			log: []string{"##[error]Unable to process file command 'output' successfully.\n",
				"##[error]Invalid format 'no equals sign'\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := emutest.Dispatch(t, bot, tt.workflow, tt.inputs)
			info, err := e.WaitRun(ctx, org, repo, id)
			if err != nil {
				t.Fatal(err)
			}
			logb, err := e.RunLog(org, repo, id)
			if err != nil {
				t.Fatal(err)
			}
			log := string(logb)
			if info.Conclusion != tt.conclusion || info.ExitCode == nil || *info.ExitCode != tt.exit ||
				!info.LocalRunner || info.RunnerName != "bumper-runner-1" {
				t.Fatalf("run = %+v (exit %v), want %s with exit %d; log:\n%s", info, info.ExitCode, tt.conclusion, tt.exit, log)
			}
			for _, want := range tt.log {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			if tt.outputs != nil {
				tok := info.Outputs["id_token"]
				delete(info.Outputs, "id_token")
				if !equalMaps(info.Outputs, tt.outputs) {
					t.Errorf("outputs = %q, want %q", info.Outputs, tt.outputs)
				}
				if tt.noEnv == nil {
					checkIDToken(t, ctx, provider, tok, id)
				}
			} else if len(info.Outputs) != 0 {
				t.Errorf("outputs = %q, want none", info.Outputs)
			}
			if s, err := e.RunSummary(org, repo, id); err != nil || s != tt.summary {
				t.Errorf("summary = %q, %v; want %q", s, err, tt.summary)
			}

			run, _, err := bot.Actions.GetWorkflowRunByID(ctx, org, repo, id)
			if err != nil {
				t.Fatal(err)
			}
			env := logEnv(log)
			ws := regexp.MustCompile(`(?m)^pwd=(.*)$`).FindStringSubmatch(log)
			want := map[string]string{
				"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_ACTION": "__run",
				"GITHUB_REPOSITORY": "acme/widgets", "GITHUB_REPOSITORY_OWNER": "acme",
				"GITHUB_RUN_ID": strconv.FormatInt(id, 10), "GITHUB_RUN_NUMBER": strconv.Itoa(run.GetRunNumber()),
				"GITHUB_RUN_ATTEMPT": "1", "GITHUB_EVENT_NAME": "workflow_dispatch",
				"GITHUB_REF": "refs/heads/main", "GITHUB_REF_NAME": "main", "GITHUB_REF_TYPE": "branch",
				"GITHUB_REF_PROTECTED": "true", "GITHUB_SHA": run.GetHeadSHA(), "GITHUB_WORKFLOW_SHA": run.GetHeadSHA(),
				"GITHUB_ACTOR": run.GetActor().GetLogin(), "GITHUB_TRIGGERING_ACTOR": run.GetActor().GetLogin(),
				"GITHUB_ACTOR_ID":      strconv.FormatInt(run.GetActor().GetID(), 10),
				"GITHUB_REPOSITORY_ID": strconv.FormatInt(run.GetRepository().GetID(), 10),
				"GITHUB_SERVER_URL":    e.BaseURL(), "GITHUB_API_URL": e.BaseURL(), "GITHUB_GRAPHQL_URL": e.BaseURL() + "/graphql",
				"GITHUB_RETENTION_DAYS": "90", "RUNNER_NAME": "bumper-runner-1", "RUNNER_OS": "Linux",
				"RUNNER_ENVIRONMENT": "self-hosted", "EXTRA": "from-runner-env",
			}
			if arch != "" {
				want["RUNNER_ARCH"] = arch
			}
			for k, v := range tt.env {
				want[k] = v
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			for _, k := range append(tt.noEnv, "GITHUB_HEAD_REF", "RUNNER_DEBUG") {
				if v, ok := env[k]; ok {
					t.Errorf("%s = %q is set", k, v)
				}
			}
			if ws == nil || env["GITHUB_WORKSPACE"] != ws[1] || !strings.HasSuffix(ws[1], "/_work/widgets/widgets") {
				t.Errorf("GITHUB_WORKSPACE = %q, the step ran in %v", env["GITHUB_WORKSPACE"], ws)
			}
			temp := env["RUNNER_TEMP"]
			for k, prefix := range map[string]string{"GITHUB_OUTPUT": "set_output_", "GITHUB_STEP_SUMMARY": "step_summary_",
				"GITHUB_ENV": "set_env_", "GITHUB_PATH": "add_path_", "GITHUB_STATE": "save_state_"} {
				if !strings.HasPrefix(env[k], temp+"/_runner_file_commands/"+prefix) {
					t.Errorf("%s = %q, want a file in %s/_runner_file_commands", k, env[k], temp)
				}
			}
			if env["GITHUB_EVENT_PATH"] != temp+"/_github_workflow/event.json" || env["RUNNER_TOOL_CACHE"] == "" || temp == "" {
				t.Errorf("GITHUB_EVENT_PATH = %q, RUNNER_TEMP = %q, RUNNER_TOOL_CACHE = %q", env["GITHUB_EVENT_PATH"], temp, env["RUNNER_TOOL_CACHE"])
			}
			if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("RUNNER_TEMP was not emptied when the job ended: %v", err)
			}
			if tok := env["ACTIONS_ID_TOKEN_REQUEST_URL"]; tt.noEnv == nil &&
				(!strings.HasPrefix(tok, e.BaseURL()+"/_emulator/actions/runs/"+strconv.FormatInt(id, 10)+"/id-token?") ||
					env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] != info.OIDCRequestToken) {
				t.Errorf("ACTIONS_ID_TOKEN_REQUEST_URL = %q, TOKEN = %q", tok, env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"])
			}
			if tt.outputs != nil {
				event, err := os.ReadFile(filepath.Join(ws[1], "event.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := hooks.Validate("workflow_dispatch", event); err != nil {
					t.Errorf("GITHUB_EVENT_PATH: %v", err)
				}
				var ev struct {
					Inputs   map[string]string `json:"inputs"`
					Ref      string            `json:"ref"`
					Workflow string            `json:"workflow"`
				}
				if err := json.Unmarshal(event, &ev); err != nil || ev.Ref != "refs/heads/main" ||
					ev.Workflow != ".github/workflows/"+tt.workflow || ev.Inputs["stage"] != tt.inputs["stage"] {
					t.Errorf("event = %+v, %v", ev, err)
				}
			}

			// The job log through GitHub's route: a redirect to a URL needing no credentials.
			u, _, err := bot.Actions.GetWorkflowJobLogs(ctx, org, repo, info.JobID, 0)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(u.String())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != log {
				t.Errorf("downloaded log = %d %q, want the job log", resp.StatusCode, body)
			}
			resp, err = http.Get(strings.Replace(u.String(), "signature=", "signature=0", 1))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("a forged log URL got %d, want 403", resp.StatusCode)
			}
			job, _, err := bot.Actions.GetWorkflowJobByID(ctx, org, repo, info.JobID)
			if err != nil || job.GetConclusion() != tt.conclusion || job.GetRunnerName() != "bumper-runner-1" ||
				job.GetName() != tt.env["GITHUB_JOB"] && tt.env != nil {
				t.Errorf("job = %+v, %v", job, err)
			}
			if got, want := hookSeq(t, e, rc, id), started(tt.conclusion); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("webhooks = %v, want %v", got, want)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkIDToken verifies the token the step fetched against the emulator's issuer.
func checkIDToken(t *testing.T, ctx context.Context, provider *oidc.Provider, tok string, runID int64) {
	t.Helper()
	idt, err := provider.Verifier(&oidc.Config{ClientID: "bumper"}).Verify(ctx, tok)
	if err != nil {
		t.Fatalf("the step's ID token (%q): %v", tok, err)
	}
	var claims struct {
		Repository string `json:"repository"`
		RunID      string `json:"run_id"`
	}
	if err := idt.Claims(&claims); err != nil || claims.Repository != "acme/widgets" || claims.RunID != strconv.FormatInt(runID, 10) {
		t.Errorf("claims = %+v, %v", claims, err)
	}
}
