// Tests of what GitHub reads rather than Go: the action's metadata (action.yml at the
// repository root), the runner workflow template users copy, and the script that gets
// the bumper binary. They hold those files to the names in Go: action/ghaction's inputs
// and outputs, and the App's dispatch inputs (app/wire).
package action_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/action/ghaction"
	"github.com/bumperdev/bumper/app/wire"
)

const (
	actionFile   = "../action.yml"
	workflowFile = "../.github/workflows/bumper-run.yml"
)

// actionMeta is action.yml, decoded strictly: a key GitHub does not know is a typo.
type actionMeta struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Author      string            `yaml:"author"`
	Branding    map[string]string `yaml:"branding"`
	Inputs      yaml.Node         `yaml:"inputs"` // a node, to keep the order
	Outputs     yaml.Node         `yaml:"outputs"`
	Runs        struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

type input struct {
	Description string  `yaml:"description"`
	Required    bool    `yaml:"required"`
	Default     *string `yaml:"default"`
}

type output struct {
	Description string `yaml:"description"`
	Value       string `yaml:"value"`
}

type step struct {
	ID    string            `yaml:"id"`
	Name  string            `yaml:"name"`
	If    string            `yaml:"if"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
	Run   string            `yaml:"run"`
	Uses  string            `yaml:"uses"`
	With  map[string]string `yaml:"with"`
}

func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
}

// pairs decodes a mapping node in its order.
func pairs[T any](t *testing.T, n yaml.Node) ([]string, map[string]T) {
	t.Helper()
	if n.Kind != yaml.MappingNode {
		t.Fatalf("line %d: not a mapping", n.Line)
	}
	var keys []string
	vals := map[string]T{}
	for i := 0; i < len(n.Content); i += 2 {
		var v T
		if err := n.Content[i+1].Decode(&v); err != nil {
			t.Fatalf("%s: %v", n.Content[i].Value, err)
		}
		keys = append(keys, n.Content[i].Value)
		vals[n.Content[i].Value] = v
	}
	return keys, vals
}

func loadAction(t *testing.T) (actionMeta, []string, map[string]input, map[string]step) {
	t.Helper()
	var m actionMeta
	decodeStrict(t, actionFile, &m)
	names, inputs := pairs[input](t, m.Inputs)
	steps := map[string]step{}
	for _, s := range m.Runs.Steps {
		if s.ID != "" {
			steps[s.ID] = s
		}
	}
	return m, names, inputs, steps
}

func TestActionMetadata(t *testing.T) {
	m, names, inputs, steps := loadAction(t)
	if m.Name == "" || m.Description == "" || m.Runs.Using != "composite" {
		t.Errorf("name %q, description %q, runs.using %q: a composite action needs all three", m.Name, m.Description, m.Runs.Using)
	}
	if !slices.Equal(names, ghaction.ActionInputNames()) {
		t.Errorf("action.yml's inputs\n  %v\nghaction's\n  %v", names, ghaction.ActionInputNames())
	}
	for _, spec := range ghaction.InputSpecs() {
		in, ok := inputs[spec.Name]
		if !ok {
			continue
		}
		def := ""
		if in.Default != nil {
			def = *in.Default
		}
		if in.Required != spec.Required || def != spec.Default || (in.Required && in.Default != nil) {
			t.Errorf("input %s: required %v default %q in action.yml; ghaction says required %v default %q",
				spec.Name, in.Required, def, spec.Required, spec.Default)
		}
	}
	if v := inputs[ghaction.InputVersion]; v.Required || v.Default == nil || *v.Default != ghaction.VersionDefault {
		t.Errorf("input version: %+v, want optional, default %s", v, ghaction.VersionDefault)
	}
	for _, n := range names {
		if strings.TrimSpace(inputs[n].Description) == "" {
			t.Errorf("input %s has no description", n)
		}
	}

	onames, outputs := pairs[output](t, m.Outputs)
	if !slices.Equal(onames, ghaction.OutputNames()) {
		t.Errorf("action.yml's outputs %v, ghaction's %v", onames, ghaction.OutputNames())
	}
	for _, n := range onames {
		if want := "${{ steps.run.outputs." + n + " }}"; outputs[n].Value != want || outputs[n].Description == "" {
			t.Errorf("output %s: %+v, want value %s and a description", n, outputs[n], want)
		}
	}

	// The run step hands bumper run every input it reads, and nothing else.
	run := steps["run"]
	want := map[string]string{}
	for _, spec := range ghaction.InputSpecs() {
		want[ghaction.EnvName(spec.Name)] = "${{ inputs." + spec.Name + " }}"
	}
	if fmt.Sprint(run.Env) != fmt.Sprint(want) {
		t.Errorf("the run step's env\n  %v\nwant exactly\n  %v", run.Env, want)
	}
	if run.Shell != "bash" || !strings.Contains(run.Run, `"$RUNNER_TEMP/bumper-bin/bumper" run`) {
		t.Errorf("run step: shell %q, run %q", run.Shell, run.Run)
	}

	get := steps["get"]
	if !strings.Contains(get.Run, "/action/get-bumper.sh") || !strings.Contains(get.Run, `"$RUNNER_TEMP/bumper-bin"`) ||
		get.Env["BUMPER_VERSION"] != "${{ inputs.version }}" || get.Env["BUMPER_ACTION_PATH"] != "${{ github.action_path }}" {
		t.Errorf("get step: %+v", get)
	}
	if info, err := os.Stat("get-bumper.sh"); err != nil || info.Mode()&0o111 == 0 {
		t.Errorf("action/get-bumper.sh must exist and be executable: %v", err)
	}

	var upload *step
	for i, s := range m.Runs.Steps {
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			upload = &m.Runs.Steps[i]
		}
	}
	if upload == nil || !pinnedUse.MatchString(upload.Uses) || upload.If != "always()" ||
		upload.With["name"] != "${{ steps.name.outputs.artifact }}" || upload.With["path"] != "${{ inputs.out }}" {
		t.Errorf("upload step: %+v", upload)
	}
	if steps["name"].If != "always()" {
		t.Error("the artifact is named only when getting bumper worked: the upload after a failure would be unnamed")
	}
}

// pinnedUse is an action pinned by its full commit SHA, as CI pins its own: a tag can be
// moved to other code, a commit cannot.
var pinnedUse = regexp.MustCompile(`^actions/upload-artifact@[0-9a-f]{40}$`)

// expr matches the one expression form action.yml's env values use.
var expr = regexp.MustCompile(`^\$\{\{ ((?:inputs|github)\.[a-z_-]+) \}\}$`)

// releaseRef is the runner workflow's action ref: a release tag, as release.yml pushes.
var releaseRef = regexp.MustCompile(`^bumperdev/bumper@v[0-9]+\.[0-9]+\.[0-9]+$`)

// evalEnv evaluates a step's env as the runner would, from the given context values
// ("inputs.url", "github.action_path").
func evalEnv(t *testing.T, s step, values map[string]string) []string {
	t.Helper()
	var env []string
	for k, v := range s.Env {
		m := expr.FindStringSubmatch(v)
		if m == nil {
			t.Fatalf("env %s = %q: not ${{ inputs.NAME }} or ${{ github.NAME }}", k, v)
		}
		env = append(env, k+"="+values[m[1]])
	}
	return env
}

// inputValues prefixes input names with "inputs.", for evalEnv.
func inputValues(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		out["inputs."+k] = v
	}
	return out
}

// runStep runs a step's script with its shell, as GitHub's runner does on Linux.
func runStep(t *testing.T, s step, env []string) []byte {
	t.Helper()
	script := filepath.Join(t.TempDir(), "step.sh")
	if err := os.WriteFile(script, []byte(s.Run), 0o600); err != nil {
		t.Fatal(err)
	}
	var argv []string
	switch s.Shell {
	case "bash":
		argv = []string{"bash", "--noprofile", "--norc", "-eo", "pipefail", script}
	case "sh":
		argv = []string{"sh", "-e", script}
	default:
		t.Fatalf("step %s: shell %q", s.ID, s.Shell)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("step %s: %v\n%s", s.ID, err, out)
	}
	return out
}

// TestRunStepReachesReadInputs runs action.yml's run step for real, with a stand-in for
// bumper that keeps its environment, and reads that environment with ReadInputs: every
// input set in the workflow arrives, hyphenated names included.
func TestRunStepReachesReadInputs(t *testing.T) {
	_, _, _, steps := loadAction(t)
	temp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(temp, "bumper-bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/usr/bin/env bash\n[ \"$1\" = run ] || exit 9\nenv -0 > \"$RUNNER_TEMP/env\"\n"
	if err := os.WriteFile(filepath.Join(temp, "bumper-bin", "bumper"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{
		"url": "https://bumper.example.com", "work_item": "acme/widgets#12", "attempt": "3", "nonce": "abc123",
		"stage": "fix", "image": "/srv/img", "cache": "/srv/cache", "accel": "tcg", "allow-tcg": "true", "cpus": "4",
		"memory": "3G", "out": filepath.Join(temp, "bumper-run"), "qemu-user": "bumper-vm", "allow-insecure-http": "false",
	}
	runStep(t, steps["run"], append(evalEnv(t, steps["run"], inputValues(inputs)), "RUNNER_TEMP="+temp))
	raw, err := os.ReadFile(filepath.Join(temp, "env"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	e := ghaction.New(&bytes.Buffer{}, func(k string) string { return got[k] })
	in, err := e.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	want := ghaction.Inputs{URL: "https://bumper.example.com", WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 12}, Attempt: 3, Nonce: "abc123",
		Stage: "fix", Image: "/srv/img", Cache: "/srv/cache", Accel: "tcg", AllowTCG: true, CPUs: 4, Memory: "3G",
		Out: filepath.Join(temp, "bumper-run"), QEMUUser: "bumper-vm"}
	if in != want {
		t.Errorf("bumper run read\n  %+v\nwant\n  %+v", in, want)
	}
}

// TestArtifactName runs the naming step: bumper-<issue>-<attempt>, and text that is not
// a number (a hand-dispatched run can send anything) is neither run nor kept.
func TestArtifactName(t *testing.T) {
	_, _, _, steps := loadAction(t)
	tests := []struct{ workItem, attempt, want string }{
		{"acme/widgets#12", "2", "bumper-12-2"},
		{"acme/widgets", "1", "bumper-unknown-1"},
		{"acme/widgets#1$(touch PWNED)", "1`touch PWNED`", "bumper-unknown-unknown"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		outFile := filepath.Join(dir, "output")
		env := append(evalEnv(t, steps["name"], inputValues(map[string]string{"work_item": tt.workItem, "attempt": tt.attempt})), "GITHUB_OUTPUT="+outFile)
		s := steps["name"]
		s.Run = "cd " + dir + "\n" + s.Run
		runStep(t, s, env)
		raw, _ := os.ReadFile(outFile)
		if got := strings.TrimSpace(string(raw)); got != "artifact="+tt.want {
			t.Errorf("%q, %q: %q, want artifact=%s", tt.workItem, tt.attempt, got, tt.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
			t.Errorf("%q ran a command", tt.workItem)
		}
	}
}

// workflow is the runner workflow template, decoded strictly.
type workflow struct {
	Name    string `yaml:"name"`
	RunName string `yaml:"run-name"`
	On      struct {
		WorkflowDispatch struct {
			Inputs yaml.Node `yaml:"inputs"`
		} `yaml:"workflow_dispatch"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Concurrency map[string]any    `yaml:"concurrency"`
	Jobs        map[string]struct {
		RunsOn         []string `yaml:"runs-on"`
		TimeoutMinutes int      `yaml:"timeout-minutes"`
		Steps          []step   `yaml:"steps"`
	} `yaml:"jobs"`
}

type dispatchInput struct {
	Description string `yaml:"description"`
	Required    bool   `yaml:"required"`
}

func TestRunnerWorkflow(t *testing.T) {
	var w workflow
	decodeStrict(t, workflowFile, &w)
	names, inputs := pairs[dispatchInput](t, w.On.WorkflowDispatch.Inputs)
	if !slices.Equal(names, wire.DispatchInputs()) {
		t.Errorf("the workflow's dispatch inputs %v, the App dispatches %v", names, wire.DispatchInputs())
	}
	for _, n := range names {
		if !inputs[n].Required {
			t.Errorf("dispatch input %s must be required", n)
		}
	}
	if w.RunName != wire.RunNameTemplate {
		t.Errorf("run-name %q, want the App's %q: a re-drive finds a dead replica's run by its title", w.RunName, wire.RunNameTemplate)
	}
	if fmt.Sprint(w.Permissions) != "map[id-token:write]" {
		t.Errorf("permissions %v, want id-token: write only", w.Permissions)
	}
	job, ok := w.Jobs["run"]
	if !ok || len(w.Jobs) != 1 || !slices.Contains(job.RunsOn, "self-hosted") || !slices.Contains(job.RunsOn, "bumper") {
		t.Fatalf("want one job, run, on [self-hosted, bumper]: %+v", w.Jobs)
	}
	var uses *step
	for i, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "bumperdev/bumper@") {
			uses = &job.Steps[i]
		}
	}
	// A release tag: get-bumper.sh downloads a release's binary only for one, and builds
	// from source (needing Go, which no documented runner has) for any other ref.
	if uses == nil || !releaseRef.MatchString(uses.Uses) {
		t.Fatalf("no step uses bumperdev/bumper@vX.Y.Z: %+v", job.Steps)
	}

	_, actionInputs, actionSpecs, _ := loadAction(t)
	for k := range uses.With {
		if !slices.Contains(actionInputs, k) {
			t.Errorf("the workflow passes %s, which action.yml does not have", k)
		}
	}
	for _, n := range actionInputs {
		if actionSpecs[n].Required {
			if _, ok := uses.With[n]; !ok {
				t.Errorf("the workflow does not pass the required input %s", n)
			}
		}
	}
	for _, n := range wire.DispatchInputs() {
		if want := "${{ inputs." + n + " }}"; uses.With[n] != want {
			t.Errorf("with.%s = %q, want %s", n, uses.With[n], want)
		}
	}
	if uses.With[ghaction.InputURL] != "${{ vars.BUMPER_URL }}" || !strings.Contains(uses.With[ghaction.InputAllowTCG], "vars.BUMPER_ALLOW_TCG") {
		t.Errorf("url and allow-tcg must come from the variables BUMPER_URL and BUMPER_ALLOW_TCG: %v", uses.With)
	}
}
