package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

const (
	webhookSecret = "whsec_bumper_e2e"
	runTokenKey   = "0123456789abcdef0123456789abcdef"
	// modelKey is the real model key: only the firewall holds it, and the scripted model
	// server accepts nothing else, so a call that succeeds proves the sentinel was swapped.
	modelKey = "sk-ant-e2e-real-key"
	// budgetUSD is the repository's cost cap per run.
	budgetUSD = "0.05"
)

// world is the whole product on loopback: the GitHub emulator with its git server and
// local runner, serve, and (started by the local runner for each dispatched run) the
// real `bumper run` with its firewall and a QEMU microVM under TCG.
type world struct {
	t      testing.TB
	ctx    context.Context
	e      *ghemu.Emulator
	srv    *app.Server
	serve  *httptest.Server
	bin    string
	runDir string
	model  *modelServer
	sealer *ledger.Sealer
	// calls counts the requests GitHub received, by kind (see kindOf).
	calls *callCounter
}

// callCounter counts requests to the emulator by kind.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
	// api counts REST calls by method and path, for the benchmark's breakdown.
	api map[string]int
	// people are the seeded users' tokens: the test acting as a maintainer is not
	// Bumper, and its calls are counted apart.
	people map[string]bool
	// atPull is the API count when the last pull request was opened (that call included).
	atPull int
}

func (c *callCounter) observe(r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	auth := r.Header.Get("Authorization")
	_, tok, _ := strings.Cut(auth, " ")
	if c.people[tok] {
		c.n[kindPeople]++
		return
	}
	k := kindOf(r.URL.Path)
	c.n[k]++
	if k == kindAPI {
		key := r.Method + " " + digits.ReplaceAllString(r.URL.Path, "N")
		c.api[key]++
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") {
			c.atPull = c.n[kindAPI]
		}
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

// snapshot returns the counts so far.
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// Kinds of requests: the REST API (what GitHub's rate limit counts), git's smart HTTP,
// the Actions OIDC token and issuer, and the emulator's own controls.
const (
	kindAPI      = "api"
	kindGit      = "git"
	kindOIDC     = "oidc"
	kindEmulator = "emulator"
	kindPeople   = "people" // the test's own calls, as the maintainer
)

func kindOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/id-token") || strings.HasPrefix(path, "/.well-known/"):
		return kindOIDC
	case strings.HasPrefix(path, "/_emulator/"):
		return kindEmulator
	case strings.HasSuffix(path, "/info/refs") || strings.HasSuffix(path, "/git-upload-pack") || strings.HasSuffix(path, "/git-receive-pack"):
		return kindGit
	default:
		return kindAPI
	}
}

// seed is the sample repository: a shell project whose test fails until widgets.sh
// prints 4, with the scripted agent and a .github/bumper.yml that runs it.
func seed(t testing.TB) *ghemu.Seed {
	agent, err := os.ReadFile("testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	reviewer, err := os.ReadFile("testdata/reviewer.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := ghemu.DefaultSeed()
	// The repository's CI is another App, as on GitHub, where only Apps create check
	// runs (world.ci plays it).
	s.Users = append(s.Users, ghemu.SeedUser{Login: ciBot, Bot: true})
	s.Repositories[0].Collaborators[ciBot] = "write"
	files := s.Repositories[0].Files
	files["widgets.sh"] = "#!/bin/sh\n# Prints the widget count.\necho 3\n"
	files["test.sh"] = "#!/bin/sh\n# The widget count must be 4.\ngot=$(sh widgets.sh)\nif [ \"$got\" != 4 ]; then echo \"FAIL: widgets.sh printed $got, want 4\"; exit 1; fi\necho 'PASS: 4 widgets'\n"
	files[".bumper/agent.sh"] = string(agent)
	files[".bumper/reviewer.sh"] = string(reviewer)
	// No reviewer unless a test turns it on (withReviewer): a review run is a VM run of
	// its own, and most tests end where the pull request opens.
	files[".github/bumper.yml"] = "version: 1\n" +
		"harness:\n  name: command\n  command: sh .bumper/agent.sh\n" +
		"verification:\n  - sh test.sh\n" +
		"github_api:\n  - GET /repos/*/*/pulls\n" +
		"bounds:\n  verification_rounds: 2\n  cost_per_run_usd: " + budgetUSD + "\n  wall_time: 10m\n" +
		reviewerOff
	return s
}

// TestWorldPolicies: the policies the worlds start from (the seed's, with the reviewer,
// with a real agent CLI, the Go module's) are ones Bumper reads and the file's JSON Schema
// accepts; newWorld checks each world's own as it starts.
func TestWorldPolicies(t *testing.T) {
	policy := func(opts ...func(map[string]string)) []byte {
		files := seed(t).Repositories[0].Files
		for _, o := range opts {
			o(files)
		}
		return []byte(files[repoconfig.Path])
	}
	repoconfigtest.Valid(t, "the seed's", policy())
	repoconfigtest.Valid(t, "withReviewer", policy(withReviewer))
	repoconfigtest.Valid(t, "goPolicy", []byte(goPolicy))
	repoconfigtest.Valid(t, "goDependencyPolicy", []byte(goDependencyPolicy()))
	repoconfigtest.Valid(t, "claude-code", []byte(agentPolicy("claude-code", "")))
	repoconfigtest.Valid(t, "codex with a budget", []byte(agentPolicy("codex", "0.05")))
}

// reviewerOff ends the seed's .github/bumper.yml; withReviewer replaces it.
const reviewerOff = "reviewer: false\n"

// withReviewer turns the scripted reviewer on in the seed's policy: review runs follow
// every pull request, with their own harness.
func withReviewer(f map[string]string) {
	f[".github/bumper.yml"] = strings.Replace(f[".github/bumper.yml"], reviewerOff,
		"reviewer:\n  harness: {name: command, command: sh .bumper/reviewer.sh}\n  min_confidence: 0.8\n", 1)
}

// newWorld starts everything but the runs, which the emulator's local runner starts
// when serve dispatches them.
// options change a world: the repository's files, serve's run-token lifetime.
type options struct {
	files       func(map[string]string)
	runTokenTTL time.Duration
	// ownImages has the runner build (or find) its images in the shared test cache
	// rather than being given one, as a runner that builds environments must.
	ownImages bool
	// runnerEnv is added to the runner's environment (the runner host's settings).
	runnerEnv []string
	// seed changes the emulator's seed (more repositories, installations) after files.
	seed func(*ghemu.Seed)
}

func newWorld(t testing.TB, opts ...options) *world {
	t.Helper()
	testgate.Slow(t, "a QEMU microVM per run under TCG, serve and the emulator")
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	testgate.Command(t, "nft", "nftables")
	testgate.Command(t, "git", "git")
	img := imagetest.Image(t)
	bin := imagetest.AgentBinary(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	if _, ok := t.(*testing.B); ok {
		log = zerolog.Nop()
	}
	w := &world{t: t, ctx: log.WithContext(context.Background()), bin: bin, runDir: t.TempDir(), model: newModelServer(t),
		calls: &callCounter{n: map[string]int{}, api: map[string]int{}, people: map[string]bool{}}}

	// serve's address must be known before the emulator starts (the runner's
	// environment names it), and serve needs the emulator's: a handler swapped in later.
	var handler atomic.Pointer[http.Handler]
	w.serve = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if h := handler.Load(); h != nil {
			(*h).ServeHTTP(rw, r)
			return
		}
		http.Error(rw, "serve is starting", http.StatusServiceUnavailable)
	}))
	t.Cleanup(w.serve.Close)

	cache, imageDir := filepath.Join(imagetest.CacheDir(), "e2e-snapshots"), img.Dir()
	for _, o := range opts {
		if o.ownImages {
			// The runner's default image is the one imagetest built: same cache, same
			// agent binary, same packages.
			cache, imageDir = imagetest.CacheDir(), ""
		}
	}
	runner := &ghemu.Runner{
		// As a workflow step would (sh drops INPUT_ALLOW-TCG, hence the underscore form
		// below): the output directory in the job's workspace, which
		// outlives RUNNER_TEMP, for the test to read.
		Command: []string{"sh", "-c", `INPUT_OUT="$GITHUB_WORKSPACE/bumper-out" exec "$0" run`, bin},
		WorkDir: w.runDir,
		Timeout: 15 * time.Minute,
		Env: []string{
			"INPUT_URL=" + w.serve.URL, "INPUT_IMAGE=" + imageDir, "INPUT_CACHE=" + cache,
			"INPUT_ACCEL=tcg", "INPUT_ALLOW_TCG=true", "INPUT_MEMORY=1G", "INPUT_CPUS=2",
			"BUMPER_ANTHROPIC_BASE_URL=" + w.model.URL, "ANTHROPIC_API_KEY=" + modelKey,
			"BUMPER_FIREWALL_RESOLVE=" + strings.Join(registryPins(t, "proxy.golang.org"), ","),
		},
	}
	for _, o := range opts {
		runner.Env = append(runner.Env, o.runnerEnv...)
	}
	sd := seed(t)
	var ttl time.Duration
	for _, o := range opts {
		if o.files != nil {
			o.files(sd.Repositories[0].Files)
		}
		if o.seed != nil {
			o.seed(sd)
		}
		ttl = max(ttl, o.runTokenTTL)
	}
	// The world's policy is an example of the file like the docs': Bumper reads it, and
	// an editor with the file's JSON Schema would not flag it.
	repoconfigtest.Valid(t, "the world's "+repoconfig.Path, []byte(sd.Repositories[0].Files[repoconfig.Path]))
	w.e = emutest.New(t, ghemu.Options{Seed: sd, WebhookSecret: webhookSecret, Runner: runner}, emutest.Observe(w.calls.observe))

	w.calls.mu.Lock()
	for _, u := range w.e.Users() {
		w.calls.people[u.Token] = true
	}
	w.calls.mu.Unlock()

	cfg := app.DefaultConfig()
	cfg.GitHub.WebURL = w.e.BaseURL()
	cfg.GitHub.V3APIURL = w.e.BaseURL() + "/"
	cfg.GitHub.App.IntegrationID = w.e.AppID()
	cfg.GitHub.App.PrivateKey = string(w.e.AppKeyPEM())
	cfg.GitHub.App.WebhookSecret = webhookSecret
	cfg.Bumper.OIDCIssuer = w.e.OIDCIssuerURL()
	cfg.Bumper.RunTokenKey = hex.EncodeToString([]byte(runTokenKey))
	// serve signs a statement of every run that publishes a head, as setup configures it.
	key, err := attest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Bumper.AttestationKeyFile = filepath.Join(t.TempDir(), "attestation.pem")
	if err := os.WriteFile(cfg.Bumper.AttestationKeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := app.New(w.ctx, cfg, app.Options{RunTokenTTL: ttl})
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	w.srv = srv
	h := srv.Handler()
	handler.Store(&h)
	w.e.SetWebhookURL(w.serve.URL + cfg.Server.WebhookPath)
	if _, err := srv.Rebuild(w.ctx); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	if w.sealer, err = ledger.NewSealer([]byte(runTokenKey)); err != nil {
		t.Fatal(err)
	}
	return w
}

// settle waits until the emulator delivered every webhook and serve handled it.
func (w *world) settle() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	for range 6 {
		if err := w.e.WaitWebhooks(ctx); err != nil {
			w.t.Fatalf("waiting for webhooks: %v", err)
		}
		if err := w.srv.Drain(ctx); err != nil {
			w.t.Fatalf("waiting for serve: %v", err)
		}
	}
}

func (w *world) user(login string) *gogithub.Client {
	c := gogithub.NewClient(nil).WithAuthToken(w.e.UserToken(login))
	c.BaseURL, _ = url.Parse(w.e.BaseURL() + "/")
	return c
}

func (w *world) openIssue(title, body string) int {
	w.t.Helper()
	is, _, err := w.user(ghemu.DefaultMaintainer).Issues.Create(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.IssueRequest{Title: &title, Body: &body})
	if err != nil {
		w.t.Fatalf("create issue: %v", err)
	}
	return is.GetNumber()
}

func (w *world) label(n int, label string) {
	w.t.Helper()
	if _, _, err := w.user(ghemu.DefaultMaintainer).Issues.AddLabelsToIssue(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, []string{label}); err != nil {
		w.t.Fatalf("label: %v", err)
	}
	w.settle()
}

func (w *world) comment(who string, n int, body string) {
	w.t.Helper()
	if _, _, err := w.user(who).Issues.CreateComment(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, &gogithub.IssueComment{Body: &body}); err != nil {
		w.t.Fatalf("comment: %v", err)
	}
	w.settle()
}

// record reads the work item's record from its status comment on GitHub.
func (w *world) record(n int) *ledger.Record {
	w.t.Helper()
	cs, _, err := w.user(ghemu.DefaultMaintainer).Issues.ListComments(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n,
		&gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, c := range cs {
		if ledger.IsStatusComment(c.GetBody()) && c.GetUser().GetLogin() == ghemu.DefaultAppSlug+"[bot]" {
			r, err := w.sealer.Decode(c.GetBody())
			if err != nil {
				w.t.Fatalf("status comment does not decode: %v", err)
			}
			return r
		}
	}
	w.t.Fatalf("issue #%d has no status comment", n)
	return nil
}

// approve labels the issue and approves it as the maintainer, and returns the run serve
// dispatched.
func (w *world) approve(n int) ghemu.RunInfo {
	w.t.Helper()
	if r := w.record(n); r.State != ledger.AwaitingApproval {
		w.t.Fatalf("issue #%d is %s, want awaiting-approval (%s)", n, r.State, r.Reason)
	}
	before := len(w.runs())
	w.comment(ghemu.DefaultMaintainer, n, "/approve")
	if r := w.record(n); r.State != ledger.Running {
		w.t.Fatalf("after /approve issue #%d is %s (%s)", n, r.State, r.Reason)
	}
	runs := w.runs()
	if len(runs) != before+1 {
		w.t.Fatalf("%d runs after /approve, want %d", len(runs), before+1)
	}
	return runs[len(runs)-1]
}

func (w *world) runs() []ghemu.RunInfo {
	w.t.Helper()
	runs, err := w.e.Runs(ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		w.t.Fatal(err)
	}
	return runs
}

// wait waits for a run to complete, then for serve to handle what it caused.
func (w *world) wait(run ghemu.RunInfo) ghemu.RunInfo {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 15*time.Minute)
	defer cancel()
	done, err := w.e.WaitRun(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID)
	if err != nil {
		w.t.Fatalf("run %d: %v", run.ID, err)
	}
	w.settle()
	return done
}

// ran is an issue's run, ended: the issue, the run, its job log, its output directory
// and its evidence.
type ran struct {
	issue int
	run   ghemu.RunInfo
	log   string
	out   string
	ev    *evidence.Evidence
}

// runIssue opens an issue, labels it, approves it and waits for its run, which must
// end with conclusion; the evidence is validated when the run succeeded.
func (w *world) runIssue(title, body, conclusion string) ran {
	w.t.Helper()
	n := w.openIssue(title, body)
	w.label(n, "agent:implement")
	run := w.approve(n)
	done := w.wait(run)
	log := w.jobLog(run)
	if done.Conclusion != conclusion {
		w.t.Fatalf("run %d ended %s, want %s:\n%s", run.ID, done.Conclusion, conclusion, log)
	}
	r := ran{issue: n, run: run, log: log, out: w.out(run)}
	r.ev = readEvidence(w.t, r.out)
	if conclusion == "success" {
		if err := r.ev.Validate(); err != nil {
			w.t.Fatalf("evidence.json does not validate: %v", err)
		}
	}
	return r
}

// jobLog is the run's job log as GitHub would show it.
func (w *world) jobLog(run ghemu.RunInfo) string {
	b, _ := w.e.RunLog(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID)
	return string(b)
}

// out is the run's output directory (the artifact).
func (w *world) out(run ghemu.RunInfo) string {
	return filepath.Join(w.runDir, strconv.FormatInt(run.ID, 10), "_work", ghemu.DefaultRepo, ghemu.DefaultRepo, "bumper-out")
}

// waitLog waits until the run's job log contains s.
func (w *world) waitLog(run ghemu.RunInfo, s string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if strings.Contains(w.jobLog(run), s) {
			return
		}
		if r, err := w.e.Run(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID); err == nil && r.Status == "completed" {
			w.t.Fatalf("run %d completed before its log said %q:\n%s", run.ID, s, w.jobLog(run))
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.t.Fatalf("run %d never logged %q:\n%s", run.ID, s, w.jobLog(run))
}

// modelServer is a scripted Anthropic Messages API: it answers every call with a short
// message and its usage, and accepts only the real key.
type modelServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
	keys  []string
}

func newModelServer(t testing.TB) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.calls++
		m.keys = append(m.keys, r.Header.Get("X-Api-Key"))
		m.mu.Unlock()
		if r.Header.Get("X-Api-Key") != modelKey {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(rw, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(map[string]any{
			"id": "msg_e2e", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []map[string]string{{"type": "text", "text": "1, 2, 3"}}, "stop_reason": "end_turn",
			"usage": map[string]int{"input_tokens": 12, "output_tokens": 7},
		})
	}))
	t.Cleanup(m.Close)
	return m
}

// registryPins are the HOST:IP pins a runner host here needs for the public registries
// its tests reach: this workplace answers for them on an address the firewall refuses
// (a documentation range), as a mirror on a private address would on a company's
// network, so the runner host's admin setting (BUMPER_FIREWALL_RESOLVE) trusts it. On a
// host that resolves them to public addresses there is nothing to pin.
func registryPins(t testing.TB, hosts ...string) []string {
	var pins []string
	filter := policy.NewAddrFilter(nil)
	for _, h := range hosts {
		addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", h)
		if err != nil || len(addrs) == 0 {
			t.Logf("%s does not resolve here (%v): tests that reach it will fail", h, err)
			continue
		}
		if d := filter.Check(addrs[0]); !d.Allowed {
			pins = append(pins, h+":"+addrs[0].String())
		}
	}
	return pins
}
