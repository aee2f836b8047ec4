package actions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/ghemu/webhook"
)

// A job as GitHub's runner lays it out: its directory, its event file, its file
// commands, and the environment its step gets.

// jobFiles are the paths of one job on disk.
type jobFiles struct {
	dir, log, workspace, temp, tool, event string
	output, summary, env, path, state      string
}

func newJobFiles(root string, rp *state.Repo, run *state.WorkflowRun) jobFiles {
	dir := filepath.Join(root, strconv.FormatInt(run.ID, 10))
	work := filepath.Join(dir, "_work")
	temp := filepath.Join(work, "_temp")
	cmds := filepath.Join(temp, "_runner_file_commands")
	f := jobFiles{dir: dir, log: filepath.Join(dir, jobLogFile), workspace: filepath.Join(work, rp.Name, rp.Name),
		temp: temp, tool: filepath.Join(work, "_tool"),
		event: filepath.Join(temp, "_github_workflow", "event.json")}
	f.output = filepath.Join(cmds, "set_output_"+state.NewGUID())
	f.summary = filepath.Join(cmds, "step_summary_"+state.NewGUID())
	f.env = filepath.Join(cmds, "set_env_"+state.NewGUID())
	f.path = filepath.Join(cmds, "add_path_"+state.NewGUID())
	f.state = filepath.Join(cmds, "save_state_"+state.NewGUID())
	return f
}

// prepareJob creates the job's directories, its event file and empty file command
// files, and returns its environment; inside the caller's transaction.
func (a *Actions) prepareJob(w *state.World, rp *state.Repo, run *state.WorkflowRun, f jobFiles, runnerName string) ([]string, error) {
	for _, d := range []string{f.workspace, f.tool, filepath.Dir(f.output), filepath.Dir(f.event)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("failed to prepare the job's directories: %w", err)
		}
	}
	event, err := json.MarshalIndent(dispatchEvent(w, rp, run), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to encode the event payload: %w", err)
	}
	if err := os.WriteFile(f.event, event, 0o600); err != nil {
		return nil, fmt.Errorf("failed to write the event payload: %w", err)
	}
	for _, p := range []string{f.log, f.output, f.summary, f.env, f.path, f.state} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", filepath.Base(p), err)
		}
	}
	return a.jobEnv(w, rp, run, f, runnerName), nil
}

// dispatchEvent is the workflow_dispatch event payload GITHUB_EVENT_PATH holds.
func dispatchEvent(w *state.World, rp *state.Repo, run *state.WorkflowRun) any {
	rn := render.New(w, nil)
	inputs := render.Obj{}
	for k, v := range run.Inputs {
		inputs[k] = v
	}
	p := render.Obj{"inputs": inputs, "ref": "refs/heads/" + run.Ref, "workflow": run.WorkflowPath,
		"repository": rn.Repo(rp), "sender": rn.User(run.Actor)}
	if org := rn.OrgOf(rp); org != nil {
		p["organization"] = org
	}
	return webhook.Shape(p)
}

// inheritedEnvDropped are the prefixes of variables not passed on from the emulator's
// own environment: a step sees only the GitHub values of these, never an outer CI's.
var inheritedEnvDropped = []string{"GITHUB_", "RUNNER_", "ACTIONS_", "INPUT_", "STATE_"}

// jobEnv is the process environment: the emulator's own minus GitHub's names, then
// Runner.Env, then what GitHub's runner sets for a step.
func (a *Actions) jobEnv(w *state.World, rp *state.Repo, run *state.WorkflowRun, f jobFiles, runnerName string) []string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		drop := k == "CI"
		for _, p := range inheritedEnvDropped {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			env[k] = v
		}
	}
	for _, kv := range a.runner.cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ref := "refs/heads/" + run.Ref
	id := func(login string) string {
		if u := w.User(login); u != nil {
			return strconv.FormatInt(u.ID, 10)
		}
		return "0"
	}
	base := w.BaseURL()
	protected := rp.Protection(run.Ref) != nil
	for k, v := range map[string]string{
		"CI":                         "true",
		"GITHUB_ACTION":              "__run",
		"GITHUB_ACTIONS":             "true",
		"GITHUB_ACTOR":               run.Actor,
		"GITHUB_ACTOR_ID":            id(run.Actor),
		"GITHUB_API_URL":             base,
		"GITHUB_ENV":                 f.env,
		"GITHUB_EVENT_NAME":          run.Event,
		"GITHUB_EVENT_PATH":          f.event,
		"GITHUB_GRAPHQL_URL":         base + "/graphql",
		"GITHUB_JOB":                 run.JobName(),
		"GITHUB_OUTPUT":              f.output,
		"GITHUB_PATH":                f.path,
		"GITHUB_REF":                 ref,
		"GITHUB_REF_NAME":            run.Ref,
		"GITHUB_REF_PROTECTED":       strconv.FormatBool(protected),
		"GITHUB_REF_TYPE":            "branch",
		"GITHUB_REPOSITORY":          rp.FullName(),
		"GITHUB_REPOSITORY_ID":       strconv.FormatInt(rp.ID, 10),
		"GITHUB_REPOSITORY_OWNER":    rp.Owner,
		"GITHUB_REPOSITORY_OWNER_ID": id(rp.Owner),
		"GITHUB_RETENTION_DAYS":      "90",
		"GITHUB_RUN_ATTEMPT":         "1",
		"GITHUB_RUN_ID":              strconv.FormatInt(run.ID, 10),
		"GITHUB_RUN_NUMBER":          strconv.Itoa(run.Number),
		"GITHUB_SERVER_URL":          base,
		"GITHUB_SHA":                 run.HeadSHA,
		"GITHUB_STATE":               f.state,
		"GITHUB_STEP_SUMMARY":        f.summary,
		"GITHUB_TRIGGERING_ACTOR":    run.Actor,
		"GITHUB_WORKFLOW":            run.WorkflowName,
		"GITHUB_WORKFLOW_REF":        rp.FullName() + "/" + run.WorkflowPath + "@" + ref,
		"GITHUB_WORKFLOW_SHA":        run.HeadSHA,
		"GITHUB_WORKSPACE":           f.workspace,
		"RUNNER_ARCH":                runnerArch(runtime.GOARCH),
		"RUNNER_ENVIRONMENT":         "self-hosted",
		"RUNNER_NAME":                runnerName,
		"RUNNER_OS":                  runnerOS(runtime.GOOS),
		"RUNNER_TEMP":                f.temp,
		"RUNNER_TOOL_CACHE":          f.tool,
	} {
		env[k] = v
	}
	if run.IDToken {
		// GitHub's URL carries a query already; @actions/core appends "&audience=…".
		env["ACTIONS_ID_TOKEN_REQUEST_URL"] = oidcRequestURL(w, run) + "?api-version=2.0"
		env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = run.OIDCRequestToken
	}
	for name, v := range run.Inputs {
		env[inputEnvName(name)] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// inputEnvName is the variable GitHub's runner gives an action input: INPUT_, then the
// name with spaces replaced by underscores, upper-cased. Hyphens stay.
func inputEnvName(name string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, " ", "_"))
}

func runnerArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "X64"
	case "386":
		return "X86"
	case "arm64":
		return "ARM64"
	case "arm":
		return "ARM"
	}
	return strings.ToUpper(goarch)
}

func runnerOS(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return goos
}
