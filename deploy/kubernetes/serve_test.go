// Package kubernetes holds the example manifests for running bumper serve on Kubernetes;
// its test checks them against Kubernetes' own types and against the repository: the
// user the Dockerfile's serve target runs as, the routes serve registers.
package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	dfparser "github.com/moby/buildkit/frontend/dockerfile/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const repoRoot = "../.."

// manifests are serve.yaml's objects, each decoded strictly into its Kubernetes type: a
// field Kubernetes does not know is an error, as `kubectl apply` makes it by default.
type manifests struct {
	deploy  appsv1.Deployment
	service corev1.Service
	ingress networkingv1.Ingress
	pdb     policyv1.PodDisruptionBudget
}

func load(t *testing.T) manifests {
	t.Helper()
	f, err := os.Open("serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var m manifests
	seen := map[string]bool{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("failed to split serve.yaml: %v", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("failed to read a document's kind: %v", err)
		}
		var into any
		switch head.Kind {
		case "Deployment":
			into = &m.deploy
		case "Service":
			into = &m.service
		case "Ingress":
			into = &m.ingress
		case "PodDisruptionBudget":
			into = &m.pdb
		default:
			t.Fatalf("serve.yaml has an unexpected %s", head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("the %s is not valid: %v", head.Kind, err)
		}
		seen[head.Kind] = true
	}
	for _, k := range []string{"Deployment", "Service", "Ingress", "PodDisruptionBudget"} {
		if !seen[k] {
			t.Fatalf("serve.yaml has no %s", k)
		}
	}
	return m
}

func serveContainer(t *testing.T, d appsv1.Deployment) corev1.Container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("the Deployment has %d containers, want serve alone", len(cs))
	}
	return cs[0]
}

// containerPort resolves a probe's or Service's port (by name or number) to the
// container's port number.
func containerPort(c corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// addrPort is the port of a listen address such as 0.0.0.0:8080.
func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	return int32(n)
}

// serveRoutes reads the paths of the runner endpoints from app/wire (the constants
// named Path…), as serve registers them.
func serveRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "app/wire/wire.go"), nil, 0)
	if err != nil {
		t.Fatalf("failed to parse app/wire/wire.go: %v", err)
	}
	var paths []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if strings.HasPrefix(name.Name, "Path") && i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					p, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					paths = append(paths, p)
				}
			}
		}
		return true
	})
	if len(paths) == 0 {
		t.Fatal("app/wire/wire.go declares no Path constants")
	}
	// The webhook route, server.webhook_path's default (app/config.go).
	return append(paths, "/api/github/hook")
}

func TestServe(t *testing.T) {
	m := load(t)
	d := m.deploy
	pod := d.Spec.Template.Spec
	c := serveContainer(t, d)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"several replicas, one down at most", func(t *testing.T) {
			if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
				t.Errorf("replicas %v, want at least 2", d.Spec.Replicas)
			}
			ru := d.Spec.Strategy.RollingUpdate
			if ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
				t.Error("a rollout may stop a replica before its replacement is ready")
			}
			if m.pdb.Spec.MinAvailable == nil || m.pdb.Spec.MinAvailable.IntValue() < 1 {
				t.Error("the PodDisruptionBudget lets a drain stop every replica")
			}
		}},
		{"selectors match the pods", func(t *testing.T) {
			labels := d.Spec.Template.Labels
			for name, sel := range map[string]map[string]string{
				"Deployment": d.Spec.Selector.MatchLabels, "Service": m.service.Spec.Selector, "PodDisruptionBudget": m.pdb.Spec.Selector.MatchLabels,
			} {
				if len(sel) == 0 {
					t.Errorf("the %s selects nothing", name)
				}
				for k, v := range sel {
					if labels[k] != v {
						t.Errorf("the %s selects %s=%s, which the pods do not carry", name, k, v)
					}
				}
			}
		}},
		{"probes and metrics on the inside listener", func(t *testing.T) {
			listen := env(c)["BUMPER_METRICS_ADDRESS"].Value
			port := addrPort(t, listen)
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{
				{"liveness", c.LivenessProbe, "/healthz"},
				// Ready only after the start-up rebuild: the Service sends nothing before.
				{"readiness", c.ReadinessProbe, "/readyz"},
			} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("no %s probe over HTTP", p.name)
					continue
				}
				if p.probe.HTTPGet.Path != p.path {
					t.Errorf("%s probe on %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
				}
				if got := containerPort(c, p.probe.HTTPGet.Port); got != port {
					t.Errorf("%s probe on port %d; serve answers it on %s", p.name, got, listen)
				}
			}
			ann := d.Spec.Template.Annotations
			if ann["prometheus.io/path"] != "/metrics" || ann["prometheus.io/port"] != strconv.Itoa(int(port)) {
				t.Errorf("scrape annotations %v; /metrics is on %s", ann, listen)
			}
		}},
		{"the Service reaches the webhook listener only", func(t *testing.T) {
			webhook := addrPort(t, env(c)["BUMPER_ADDRESS"].Value)
			metrics := addrPort(t, env(c)["BUMPER_METRICS_ADDRESS"].Value)
			for _, sp := range m.service.Spec.Ports {
				switch containerPort(c, sp.TargetPort) {
				case webhook:
				case metrics:
					t.Errorf("the Service's port %s exposes the metrics listener", sp.Name)
				default:
					t.Errorf("the Service's port %s reaches no port serve listens on", sp.Name)
				}
			}
		}},
		{"listens beyond the loopback", func(t *testing.T) {
			for _, name := range []string{"BUMPER_ADDRESS", "BUMPER_METRICS_ADDRESS"} {
				host, _, ok := strings.Cut(env(c)[name].Value, ":")
				if !ok || (host != "" && host != "0.0.0.0" && host != "[::]") {
					t.Errorf("%s %q: nothing outside the pod can reach serve on it", name, env(c)[name].Value)
				}
			}
		}},
		{"secrets from the Secret, not the manifest", func(t *testing.T) {
			e := env(c)
			for _, name := range []string{"BUMPER_RUN_TOKEN_KEY", "BUMPER_GITHUB_APP_WEBHOOK_SECRET"} {
				if e[name].ValueFrom == nil || e[name].ValueFrom.SecretKeyRef == nil {
					t.Errorf("%s does not come from a Secret", name)
				}
			}
			cfg := ""
			for i, a := range c.Args {
				if a == "--config" && i+1 < len(c.Args) {
					cfg = c.Args[i+1]
				}
			}
			keyFile := e["BUMPER_PRIVATE_KEY_FILE"].Value
			for _, f := range []string{cfg, keyFile} {
				if !mountedFromSecret(pod, c, f) {
					t.Errorf("%q is not a file of a mounted Secret", f)
				}
			}
		}},
		{"the Dockerfile's non-root user", func(t *testing.T) {
			sc := pod.SecurityContext
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil {
				t.Fatal("the pod does not run as a verified non-root user")
			}
			if want := dockerfileUser(t, "serve"); strconv.Itoa(int(*sc.RunAsUser)) != want {
				t.Errorf("runAsUser %d; the serve image's USER is %s", *sc.RunAsUser, want)
			}
			csc := c.SecurityContext
			if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
				csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
				t.Error("serve's container may write its root filesystem or gain privileges")
			}
		}},
		{"the runner workflow's release", func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(repoRoot, ".github/workflows/bumper-run.yml"))
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^\s*- uses: bumperdev/bumper@(\S+)`).FindSubmatch(raw)
			if m == nil || !strings.HasSuffix(c.Image, ":"+string(m[1])) {
				t.Errorf("image %q is not the release the runner workflow's bumperdev/bumper@… names (%q)", c.Image, m)
			}
		}},
		{"graceful stop", func(t *testing.T) {
			// Longer than server.shutdown_timeout's default, 30s.
			if g := pod.TerminationGracePeriodSeconds; g == nil || *g <= 30 {
				t.Errorf("terminationGracePeriodSeconds %v cuts serve's drain short", g)
			}
		}},
		{"the Ingress carries serve's routes over TLS", func(t *testing.T) {
			if len(m.ingress.Spec.TLS) == 0 {
				t.Error("the Ingress has no TLS: webhooks and the token exchange need https")
			}
			for _, route := range serveRoutes(t) {
				if !ingressRoutes(t, m, c, route) {
					t.Errorf("the Ingress does not send %s to serve", route)
				}
			}
			if ingressRoutes(t, m, c, "/metrics") {
				t.Error("the Ingress exposes /metrics to the internet")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// mountedFromSecret says whether file is a key of a Secret volume mounted in c.
func mountedFromSecret(pod corev1.PodSpec, c corev1.Container, file string) bool {
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return true
				}
			}
		}
	}
	return false
}

// ingressRoutes says whether a request for path reaches serve's container port through
// the Ingress and the Service.
func ingressRoutes(t *testing.T, m manifests, c corev1.Container, path string) bool {
	t.Helper()
	for _, rule := range m.ingress.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			if p.PathType == nil || *p.PathType != networkingv1.PathTypePrefix || !strings.HasPrefix(path, p.Path) {
				continue
			}
			b := p.Backend.Service
			if b == nil || b.Name != m.service.Name {
				continue
			}
			for _, sp := range m.service.Spec.Ports {
				if (b.Port.Name != "" && sp.Name == b.Port.Name) || (b.Port.Number != 0 && sp.Port == b.Port.Number) {
					if containerPort(c, sp.TargetPort) != 0 {
						return true
					}
				}
			}
		}
	}
	return false
}

// dockerfileUser reads the USER a Dockerfile target runs as, with BuildKit's parser.
func dockerfileUser(t *testing.T, target string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := dfparser.Parse(f)
	if err != nil {
		t.Fatalf("failed to parse the Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("failed to read the Dockerfile: %v", err)
	}
	user := ""
	for _, s := range stages {
		if s.Name != target {
			continue
		}
		for _, c := range s.Commands {
			if u, ok := c.(*instructions.UserCommand); ok {
				user, _, _ = strings.Cut(u.User, ":")
			}
		}
	}
	if user == "" {
		t.Fatalf("the Dockerfile's %s target sets no USER", target)
	}
	return user
}
