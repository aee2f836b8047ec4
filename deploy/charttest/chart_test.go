// Package charttest renders actions-runner-controller's gha-runner-scale-set chart (kept
// under testdata/ at a released version, see testdata/README.md) with Bumper's values,
// deploy/arc/values.yaml, through Helm's own engine, and checks that the runner pods it
// asks for can run a Bumper run: the image, KVM and TUN devices, the privileges of the
// per-run network namespace, the image cache, the labels the runner workflow asks for,
// and the scaling limits.
package charttest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

const (
	chartDir   = "testdata/gha-runner-scale-set"
	valuesFile = "../arc/values.yaml"
	repoRoot   = "../.."
	// setFlags is what docs/kubernetes.md passes with --set.
	setFlags = "githubConfigUrl=https://github.com/example-org"
)

// runnerSet is the part of the chart's AutoscalingRunnerSet a run depends on.
type runnerSet struct {
	Kind string `json:"kind"`
	Spec struct {
		GitHubConfigURL      string                 `json:"githubConfigUrl"`
		GitHubConfigSecret   string                 `json:"githubConfigSecret"`
		RunnerGroup          string                 `json:"runnerGroup"`
		RunnerScaleSetName   string                 `json:"runnerScaleSetName"`
		RunnerScaleSetLabels []string               `json:"runnerScaleSetLabels"`
		MinRunners           *int                   `json:"minRunners"`
		MaxRunners           *int                   `json:"maxRunners"`
		Template             corev1.PodTemplateSpec `json:"-"`
	} `json:"spec"`
}

// render renders the chart as `helm template bumper-runners CHART -n bumper-runners
// -f deploy/arc/values.yaml --set …` would, and decodes the runner set. The pod template
// is decoded strictly: a key Kubernetes does not know in the values is an error here,
// where the API server would drop it or refuse it.
func render(t *testing.T) runnerSet {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("failed to load the chart: %v", err)
	}
	vals, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		t.Fatalf("failed to read %s: %v", valuesFile, err)
	}
	if err := strvals.ParseInto(setFlags, vals); err != nil {
		t.Fatalf("failed to apply --set %s: %v", setFlags, err)
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: "bumper-runners", Namespace: "bumper-runners", IsInstall: true}, nil)
	if err != nil {
		t.Fatalf("failed to compose the values: %v", err)
	}
	out, err := engine.Render(chrt, rv)
	if err != nil {
		t.Fatalf("failed to render the chart: %v", err)
	}
	raw, ok := out["gha-runner-scale-set/templates/autoscalingrunnerset.yaml"]
	if !ok {
		t.Fatalf("the chart rendered no autoscalingrunnerset.yaml; it rendered %v", keys(out))
	}
	var rs runnerSet
	if err := yaml.Unmarshal([]byte(raw), &rs); err != nil {
		t.Fatalf("failed to decode the runner set: %v\n%s", err, raw)
	}
	var doc struct {
		Spec struct {
			Template any `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("failed to decode the runner set: %v", err)
	}
	tmpl, err := yaml.Marshal(doc.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(tmpl, &rs.Spec.Template); err != nil {
		t.Fatalf("the runner pod template is not a valid pod template: %v\n%s", err, tmpl)
	}
	if rs.Kind != "AutoscalingRunnerSet" {
		t.Fatalf("rendered a %s, want an AutoscalingRunnerSet", rs.Kind)
	}
	return rs
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func runnerContainer(t *testing.T, rs runnerSet) corev1.Container {
	t.Helper()
	for _, c := range rs.Spec.Template.Spec.Containers {
		// ARC runs the job in the container named runner.
		if c.Name == "runner" {
			return c
		}
	}
	t.Fatal("the pod template has no container named runner")
	return corev1.Container{}
}

// mountedHostPath returns the host path (and its type) mounted at mountPath in c.
func mountedHostPath(pod corev1.PodSpec, c corev1.Container, mountPath string) (string, corev1.HostPathType, bool) {
	for _, m := range c.VolumeMounts {
		if m.MountPath != mountPath {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.HostPath != nil {
				typ := corev1.HostPathUnset
				if v.HostPath.Type != nil {
					typ = *v.HostPath.Type
				}
				return v.HostPath.Path, typ, !m.ReadOnly
			}
		}
	}
	return "", "", false
}

// actionDefault reads an input's default from action.yml, which a run uses when the
// runner workflow does not set it.
func actionDefault(t *testing.T, input string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs map[string]struct {
			Default string `json:"default"`
		} `json:"inputs"`
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatalf("failed to parse action.yml: %v", err)
	}
	in, ok := action.Inputs[input]
	if !ok {
		t.Fatalf("action.yml has no input %s", input)
	}
	return in.Default
}

// actionTag reads the release the runner workflow's `uses: bumperdev/bumper@…` names.
func actionTag(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".github/workflows/bumper-run.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*- uses: bumperdev/bumper@(\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the runner workflow has no step `uses: bumperdev/bumper@…`")
	}
	return string(m[1])
}

// runsOn reads the labels the runner workflow's job asks for.
func runsOn(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".github/workflows/bumper-run.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			RunsOn []string `json:"runs-on"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("failed to parse the runner workflow: %v", err)
	}
	var labels []string
	for _, j := range wf.Jobs {
		labels = append(labels, j.RunsOn...)
	}
	if len(labels) == 0 {
		t.Fatal("the runner workflow's job asks for no runner labels")
	}
	return labels
}

func TestRunnerScaleSet(t *testing.T) {
	rs := render(t)
	pod := rs.Spec.Template.Spec
	c := runnerContainer(t, rs)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"the workflow's runs-on labels are the scale set's", func(t *testing.T) {
			// A job goes to a scale set that has every label it asks for; the set's labels
			// are its name and runnerScaleSetLabels.
			have := append([]string{rs.Spec.RunnerScaleSetName}, rs.Spec.RunnerScaleSetLabels...)
			for _, l := range runsOn(t) {
				if !slices.Contains(have, l) {
					t.Errorf("the runner workflow asks for %q; the scale set has %v", l, have)
				}
			}
		}},
		{"registration", func(t *testing.T) {
			if rs.Spec.GitHubConfigURL != "https://github.com/example-org" {
				t.Errorf("githubConfigUrl %q", rs.Spec.GitHubConfigURL)
			}
			if rs.Spec.GitHubConfigSecret != "arc-github-app" {
				t.Errorf("githubConfigSecret %q, want the pre-made Secret arc-github-app of the docs", rs.Spec.GitHubConfigSecret)
			}
			if rs.Spec.RunnerGroup == "" || rs.Spec.RunnerGroup == "default" {
				t.Errorf("runnerGroup %q: privileged runners belong in a group of Bumper's own", rs.Spec.RunnerGroup)
			}
		}},
		{"scaling limits", func(t *testing.T) {
			if rs.Spec.MinRunners == nil || rs.Spec.MaxRunners == nil {
				t.Fatalf("minRunners %v, maxRunners %v: both must be set", rs.Spec.MinRunners, rs.Spec.MaxRunners)
			}
			if *rs.Spec.MaxRunners < 1 || *rs.Spec.MinRunners > *rs.Spec.MaxRunners {
				t.Errorf("minRunners %d, maxRunners %d", *rs.Spec.MinRunners, *rs.Spec.MaxRunners)
			}
		}},
		{"image", func(t *testing.T) {
			if !strings.Contains(c.Image, "/bumper-runner:v") {
				t.Errorf("image %q, want the Dockerfile's runner target at a release tag", c.Image)
			}
			// One release everywhere: the runner image's bumper builds the VM image the
			// action's bumper then runs.
			if tag := actionTag(t); !strings.HasSuffix(c.Image, ":"+tag) {
				t.Errorf("image %q; the runner workflow uses bumperdev/bumper@%s", c.Image, tag)
			}
			if n := len(c.Command); n == 0 || !strings.HasSuffix(c.Command[n-1], "exec /home/runner/run.sh") {
				t.Errorf("command %q does not end by running the Actions runner", c.Command)
			}
		}},
		{"root and the network namespace's privileges", func(t *testing.T) {
			sc := c.SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Error("the runner must run as root: the run's namespace, TAP and nftables need it")
			}
			// privileged: CAP_SYS_ADMIN and CAP_NET_ADMIN, and a writable /proc/sys for the
			// namespace's sysctls, which no set of capabilities gives.
			if sc == nil || sc.Privileged == nil || !*sc.Privileged {
				t.Error("the runner container is not privileged")
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["RUNNER_ALLOW_RUNASROOT"] != "1" {
				t.Error("RUNNER_ALLOW_RUNASROOT is not 1: GitHub's runner refuses to run as root")
			}
		}},
		{"/dev/kvm", func(t *testing.T) {
			p, typ, _ := mountedHostPath(pod, c, "/dev/kvm")
			if p != "/dev/kvm" || typ != corev1.HostPathCharDev {
				t.Errorf("/dev/kvm mounts host path %q of type %q, want the host's /dev/kvm, a CharDevice", p, typ)
			}
			if pod.NodeSelector["bumper.dev/kvm"] != "true" {
				t.Errorf("nodeSelector %v does not pick the nodes labelled for KVM", pod.NodeSelector)
			}
		}},
		{"/dev/net/tun", func(t *testing.T) {
			p, typ, _ := mountedHostPath(pod, c, "/dev/net/tun")
			if p != "/dev/net/tun" || typ != corev1.HostPathCharDev {
				t.Errorf("/dev/net/tun mounts host path %q of type %q, want the host's TUN device", p, typ)
			}
		}},
		{"image cache", func(t *testing.T) {
			cache := actionDefault(t, "cache")
			p, _, writable := mountedHostPath(pod, c, cache)
			if p == "" || !writable {
				t.Errorf("the action's cache %s is not a writable host directory in the pod (got %q): each pod would build the VM image again", cache, p)
			}
		}},
		{"room for the VM", func(t *testing.T) {
			// QEMU's 2G and 1536M are binary units: Kubernetes' 2Gi and 1536Mi.
			vm := resource.MustParse(actionDefault(t, "memory") + "i")
			limit, ok := c.Resources.Limits[corev1.ResourceMemory]
			if !ok || limit.Cmp(vm) <= 0 {
				t.Errorf("memory limit %v is not above the VM's %v: the kernel would kill QEMU", limit.String(), vm.String())
			}
			cpus := resource.MustParse(actionDefault(t, "cpus"))
			if req := c.Resources.Requests[corev1.ResourceCPU]; req.Cmp(cpus) < 0 {
				t.Errorf("cpu request %v is below the VM's %v vCPUs", req.String(), cpus.String())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestChartRefusesBadLimits: the vendored chart still checks what it checked when it was
// released, so rendering it here is a real check of the values and not a copy that
// accepts anything.
func TestChartRefusesBadLimits(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, set, want string }{
		{"min above max", setFlags + ",minRunners=9,maxRunners=1", "maxRunners has to be greater or equal to minRunners"},
		{"no githubConfigUrl", "githubConfigUrl=", "githubConfigUrl is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := chartutil.Values{}
			for k, x := range vals {
				v[k] = x
			}
			if err := strvals.ParseInto(tt.set, v); err != nil {
				t.Fatal(err)
			}
			rv, err := chartutil.ToRenderValues(chrt, v, chartutil.ReleaseOptions{Name: "bumper-runners", Namespace: "bumper-runners", IsInstall: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = engine.Render(chrt, rv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("render error %v, want %q", err, tt.want)
			}
		})
	}
}
