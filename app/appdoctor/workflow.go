package appdoctor

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/doctorreport"
)

// releaseTag is a release's tag, as release.yml pushes them (a suffix for a
// pre-release): the only refs action/get-bumper.sh finds a binary for.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// workflowFile is what doctor reads of a runner workflow.
type workflowFile struct {
	RunName     string    `yaml:"run-name"`
	On          yaml.Node `yaml:"on"`
	Permissions yaml.Node `yaml:"permissions"`
	Jobs        map[string]struct {
		RunsOn      yaml.Node `yaml:"runs-on"`
		Permissions yaml.Node `yaml:"permissions"`
		Steps       []struct {
			Uses string `yaml:"uses"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

type input struct {
	Required bool `yaml:"required"`
}

// CheckWorkflow compares a runner workflow with what the App dispatches and what the
// template (.github/workflows/bumper-run.yml) declares: workflow_dispatch with exactly
// the inputs of wire.DispatchInputs, `permissions: id-token: write` and nothing more,
// a self-hosted runner labelled bumper, and Bumper's action. path names the file in
// the findings.
func CheckWorkflow(path string, raw []byte) []doctorreport.Finding {
	const id = "repo.workflow"
	var wf workflowFile
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		return []doctorreport.Finding{{Check: id, Status: doctorreport.Blocking, Detail: fmt.Sprintf("%s does not parse: %v", path, err),
			Fix: "copy .github/workflows/bumper-run.yml from Bumper's source over it"}}
	}
	var out []doctorreport.Finding
	add := func(st doctorreport.Status, detail, fix string) {
		out = append(out, doctorreport.Finding{Check: id, Status: st, Detail: path + ": " + detail, Fix: fix})
	}
	if wf.RunName != wire.RunNameTemplate {
		add(doctorreport.Warning, "its run-name is not Bumper's, so a run's title does not name its dispatch: a serve replica that dies between "+
			"dispatching a run and recording it is succeeded by one that dispatches the attempt again (the first run is then refused at its exchange)",
			"set `run-name: \""+wire.RunNameTemplate+"\"`, as the template has")
	}
	inputs, dispatch := dispatchInputs(&wf.On)
	want := wire.DispatchInputs()
	if !dispatch {
		add(doctorreport.Blocking, "it has no workflow_dispatch trigger, so the App cannot start it",
			"add `on: workflow_dispatch:` with the inputs "+strings.Join(want, ", ")+" (all required), as the template has")
	} else {
		var missing, extraReq, extraOpt []string
		for _, n := range want {
			if _, ok := inputs[n]; !ok {
				missing = append(missing, n)
			}
		}
		for n, in := range inputs {
			if slices.Contains(want, n) {
				continue
			}
			if in.Required {
				extraReq = append(extraReq, n)
			} else {
				extraOpt = append(extraOpt, n)
			}
		}
		sort.Strings(extraReq)
		sort.Strings(extraOpt)
		if len(missing) > 0 {
			add(doctorreport.Blocking, "workflow_dispatch lacks the inputs "+strings.Join(missing, ", ")+", which the App sends (GitHub refuses a dispatch with undeclared inputs)",
				"declare them under on.workflow_dispatch.inputs, required: true, and pass them to the action under the same names, as the template does")
		}
		if len(extraReq) > 0 {
			add(doctorreport.Blocking, "workflow_dispatch requires inputs the App never sends: "+strings.Join(extraReq, ", "),
				"remove them, or make them optional")
		}
		if len(extraOpt) > 0 {
			add(doctorreport.Warning, "workflow_dispatch declares inputs the App never sends: "+strings.Join(extraOpt, ", "), "remove them")
		}
	}
	perms := permissionsOf(&wf.Permissions)
	for _, j := range wf.Jobs {
		for k, v := range permissionsOf(&j.Permissions) {
			perms[k] = v
		}
	}
	if perms["id-token"] != "write" {
		add(doctorreport.Blocking, "it does not grant `id-token: write`, so the run cannot get the OIDC token serve's token exchange takes",
			"set `permissions:` to `id-token: write` and nothing else")
	}
	var more []string
	for k, v := range perms {
		if k != "id-token" && v != "none" {
			more = append(more, k+": "+v)
		}
	}
	sort.Strings(more)
	if len(more) > 0 {
		add(doctorreport.Warning, "its GITHUB_TOKEN gets permissions no step needs: "+strings.Join(more, ", "),
			"remove them: `permissions:` should be `id-token: write` only (docs/action.md, \"The runner workflow\")")
	}
	var labels, uses bool
	var refs []string
	for _, j := range wf.Jobs {
		var on []string
		_ = j.RunsOn.Decode(&on)
		if len(on) == 0 {
			var one string
			_ = j.RunsOn.Decode(&one)
			on = []string{one}
		}
		labels = labels || (slices.Contains(on, "self-hosted") && slices.Contains(on, "bumper"))
		for _, s := range j.Steps {
			if ref, ok := strings.CutPrefix(s.Uses, "bumperdev/bumper@"); ok {
				uses = true
				if !releaseTag.MatchString(ref) {
					refs = append(refs, ref)
				}
			}
		}
	}
	if !labels {
		add(doctorreport.Warning, "no job runs on `[self-hosted, bumper]`: a run needs a runner with KVM or QEMU, nftables and root",
			"set `runs-on: [self-hosted, bumper]` and label the runners so")
	}
	if !uses {
		add(doctorreport.Blocking, "no step uses bumperdev/bumper@…, the action that runs the agent", "copy the template's step")
	}
	if len(refs) > 0 {
		add(doctorreport.Warning, "bumperdev/bumper@"+strings.Join(refs, ", @")+" is not a release tag, so the action builds bumper from source on each runner, which needs Go there (the runner image has none)",
			"pin a release tag, `uses: bumperdev/bumper@vX.Y.Z` (https://github.com/bumperdev/bumper/releases/latest), the same as the runner image's and serve's")
	}
	if len(out) == 0 {
		out = append(out, doctorreport.Finding{Check: id, Status: doctorreport.OK,
			Detail: path + " declares the inputs " + strings.Join(want, ", ") + ", grants id-token: write only, and runs Bumper's action on [self-hosted, bumper]"})
	}
	return out
}

// dispatchInputs finds on.workflow_dispatch's inputs; `on` may be a name, a list of
// names or a map.
func dispatchInputs(on *yaml.Node) (map[string]input, bool) {
	var name string
	if on.Decode(&name) == nil && name != "" {
		return map[string]input{}, name == "workflow_dispatch"
	}
	var names []string
	if on.Decode(&names) == nil && names != nil {
		return map[string]input{}, slices.Contains(names, "workflow_dispatch")
	}
	var m map[string]*struct {
		Inputs map[string]input `yaml:"inputs"`
	}
	if on.Decode(&m) != nil {
		return nil, false
	}
	wd, ok := m["workflow_dispatch"]
	if !ok {
		return nil, false
	}
	if wd == nil || wd.Inputs == nil {
		return map[string]input{}, true
	}
	return wd.Inputs, true
}

// permissionsOf reads a permissions block: a map, or read-all / write-all.
func permissionsOf(n *yaml.Node) map[string]string {
	out := map[string]string{}
	var all string
	if n.Decode(&all) == nil && all != "" {
		lvl := strings.TrimSuffix(all, "-all")
		for _, p := range []string{"actions", "checks", "contents", "deployments", "id-token", "issues", "packages", "pages", "pull-requests", "statuses"} {
			if !(p == "id-token" && lvl == "read") {
				out[p] = lvl
			}
		}
		return out
	}
	_ = n.Decode(&out)
	return out
}
