package actions

import (
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

// Workflow is the part of a workflow file the emulator reads: its name, its
// workflow_dispatch inputs, and, for the local runner, its first job's id,
// timeout-minutes and whether the permissions grant id-token: write.
type Workflow struct {
	Name string `yaml:"name"`
	// RunName is the run's title template (GitHub's run-name), whose ${{ inputs.X }}
	// and ${{ github.event.inputs.X }} the emulator fills in.
	RunName string `yaml:"run-name"`
	On      struct {
		Dispatch *struct {
			Inputs map[string]struct {
				Required bool `yaml:"required"`
				Default  any  `yaml:"default"`
			} `yaml:"inputs"`
		} `yaml:"workflow_dispatch"`
	} `yaml:"on"`
	Permissions yaml.Node `yaml:"permissions"`
	Jobs        yaml.Node `yaml:"jobs"` // a node, to keep the jobs' order
}

// ParseWorkflow reads a workflow file that can be dispatched. Its errors are GitHub's
// words for a 422.
func ParseWorkflow(raw []byte) (*Workflow, error) {
	var wf Workflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		return nil, errors.New("Workflow file is invalid YAML: " + err.Error())
	}
	if wf.On.Dispatch == nil {
		return nil, errors.New("Workflow does not have 'workflow_dispatch' trigger")
	}
	return &wf, nil
}

// Inputs checks the inputs of a dispatch against those the workflow declares and
// applies the defaults, as GitHub does: every value becomes a string. Its errors are
// GitHub's words for a 422.
func (wf *Workflow) Inputs(given map[string]any) (map[string]string, error) {
	inputs := map[string]string{}
	var unexpected []string
	for k, v := range given {
		if _, ok := wf.On.Dispatch.Inputs[k]; !ok {
			unexpected = append(unexpected, k)
			continue
		}
		switch tv := v.(type) {
		case string:
			inputs[k] = tv
		case bool, float64:
			inputs[k] = strings.TrimSpace(yamlScalar(tv))
		default:
			return nil, errors.New("Input " + k + " must be a string, number or boolean")
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		return nil, errors.New("Unexpected inputs provided: [\"" + strings.Join(unexpected, "\", \"") + "\"]")
	}
	for name, in := range wf.On.Dispatch.Inputs {
		if _, ok := inputs[name]; ok {
			continue
		}
		if in.Default != nil {
			inputs[name] = strings.TrimSpace(yamlScalar(in.Default))
		} else if in.Required {
			return nil, errors.New("Required input '" + name + "' not provided")
		}
	}
	return inputs, nil
}

func yamlScalar(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(out)
}

// firstJob reads the first job of the workflow: its id, its timeout-minutes (0 when
// absent or an expression), and whether the job's permissions, or the workflow's when
// the job sets none, grant id-token: write, as GitHub requires before a job may ask for
// an OIDC token.
func (wf *Workflow) firstJob() (id string, timeoutMinutes float64, idToken bool) {
	perms := &wf.Permissions
	if wf.Jobs.Kind == yaml.MappingNode && len(wf.Jobs.Content) >= 2 {
		id = wf.Jobs.Content[0].Value
		job := wf.Jobs.Content[1]
		for i := 0; job.Kind == yaml.MappingNode && i+1 < len(job.Content); i += 2 {
			switch k, v := job.Content[i].Value, job.Content[i+1]; k {
			case "timeout-minutes":
				if f, err := strconv.ParseFloat(v.Value, 64); err == nil && v.Kind == yaml.ScalarNode && f > 0 {
					timeoutMinutes = f
				}
			case "permissions":
				perms = v
			}
		}
	}
	switch perms.Kind {
	case yaml.ScalarNode:
		idToken = perms.Value == "write-all"
	case yaml.MappingNode:
		for i := 0; i+1 < len(perms.Content); i += 2 {
			if perms.Content[i].Value == "id-token" && perms.Content[i+1].Value == "write" {
				idToken = true
			}
		}
	}
	return id, timeoutMinutes, idToken
}

// runNameExpr is an expression of a run-name the emulator evaluates: an input, by either
// of the names a workflow_dispatch gives it.
var runNameExpr = regexp.MustCompile(`\$\{\{\s*(?:inputs|github\.event\.inputs)\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}`)

// Title is a dispatched run's title, as GitHub shows it (display_title): the workflow's
// run-name with the dispatch's inputs filled in (an input not given is empty, as
// GitHub's expressions make it), or the workflow's name without one.
func (wf *Workflow) Title(name string, inputs map[string]string) string {
	if strings.TrimSpace(wf.RunName) == "" {
		return name
	}
	return runNameExpr.ReplaceAllStringFunc(wf.RunName, func(expr string) string {
		return inputs[runNameExpr.FindStringSubmatch(expr)[1]]
	})
}

// Dispatch creates the run of a workflow_dispatch inside the caller's transaction: the
// workflow at path, its file read at sha of branch, dispatched by actor with inputs
// (Inputs' result). It sends workflow_run requested and workflow_job queued, and hands
// the run to the local runner if that takes the workflow.
func (a *Actions) Dispatch(w *state.World, rp *state.Repo, wf *Workflow, path, branch, sha, actor string, inputs map[string]string) *state.WorkflowRun {
	now := w.Timestamp()
	name := wf.Name
	if name == "" {
		name = path
	}
	job, timeout, idToken := wf.firstJob()
	run := &state.WorkflowRun{ID: w.NextID()}
	run.WorkflowID = rp.WorkflowID(path)
	run.JobID = w.NextID()
	run.WorkflowPath, run.WorkflowName, run.Ref, run.HeadSHA, run.Event = path, name, branch, sha, "workflow_dispatch"
	run.Actor, run.Inputs, run.Status = actor, inputs, "queued"
	run.Title = wf.Title(name, inputs)
	run.CreatedAt, run.UpdatedAt, run.StartedAt = now, now, now
	run.OIDCRequestToken = state.RandomToken("ghr_")
	run.Job, run.TimeoutMinutes, run.IDToken = job, timeout, idToken
	rp.AddRun(run)
	rn := render.New(w, a.commits)
	a.hooks.Emit(w, "workflow_run", "requested", rp, run.Actor, render.Obj{"workflow_run": rn.Run(rp, run),
		"workflow": rn.Workflow(rp, run)})
	a.hooks.Emit(w, "workflow_job", "queued", rp, run.Actor, render.Obj{"workflow_job": rn.Job(rp, run)})
	if a.runner != nil && a.runner.serves(run.WorkflowPath) {
		run.LocalRunner = true
		a.startLocal(rp, run)
	}
	return run
}
