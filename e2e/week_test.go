package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// weekPlan is how big a week is: the short one runs in CI, the full one is `make soak`
// (BUMPER_WEEK=full).
type weekPlan struct {
	name string
	// items are the work items, spread over repos in turn.
	items int
	repos []string
	// parallel is how many runs the runner host executes at once; inFlight how many
	// items the maintainers drive at once.
	parallel, inFlight int
	// serveKills are the replicas killed with SIGKILL and restarted; runnerKills the
	// `bumper run` processes killed with SIGKILL mid-run.
	serveKills, runnerKills int
	// cacheFull points the runs' image cache at a full file system for a few items.
	cacheFull bool
}

func weekPlanFromEnv(t *testing.T) weekPlan {
	repos := []string{weekPlain, weekProtected, weekEnvironment}
	switch v := os.Getenv("BUMPER_WEEK"); v {
	case "", "short":
		return weekPlan{name: "short", items: 12, repos: repos, parallel: 3, inFlight: 4, serveKills: 1, runnerKills: 1}
	case "full":
		return weekPlan{name: "full", items: 40, repos: repos, parallel: 4, inFlight: 6, serveKills: 2, runnerKills: 2, cacheFull: true}
	default:
		t.Fatalf("BUMPER_WEEK=%q: use short (the default) or full", v)
		return weekPlan{}
	}
}

// admin is the week's admin, who sets Bumper up and installs the App.
const weekAdmin = "olivia"

// The week's repositories, as their teams keep them: one merges what its maintainers
// accept, one requires its CI (another App's ci/test) on main, one needs an environment
// (a tool its setup installs, without which its test fails).
const (
	weekPlain       = "widgets"
	weekProtected   = "gadgets"
	weekEnvironment = "gizmos"
)

// widgetLintSetup is gizmos' environment setup: it installs the team's linter, which its
// test.sh runs, into the VM user's ~/bin (first on the runs' PATH).
const widgetLintSetup = `#!/bin/sh
# Installs widget-lint, which test.sh runs: the runs find it in the environment's image.
set -eu
mkdir -p "$HOME/bin"
cat >"$HOME/bin/widget-lint" <<'LINT'
#!/bin/sh
# widget-lint FILE: a widget script starts with #!/bin/sh and prints one number.
head -n 1 "$1" | grep -qx '#!/bin/sh' || { echo "widget-lint: $1 does not start with #!/bin/sh"; exit 1; }
echo "widget-lint: $1 ok"
LINT
chmod +x "$HOME/bin/widget-lint"
echo "setup: widget-lint installed"
`

// weekSeed is the week's GitHub: acme's three repositories, each the sample project
// with the scripted agent (gadgets with its CI required, gizmos with its environment),
// and the App not yet installed: the admin installs it.
func weekSeed(t *testing.T, repos []string) *ghemu.Seed {
	s := seed(t)
	s.Users = append(s.Users, ghemu.SeedUser{Login: weekAdmin, Name: "Olivia Admin"})
	base := s.Repositories[0]
	s.Repositories = nil
	for _, name := range repos {
		r := base
		r.Name = name
		r.Protected = nil
		r.Files = maps.Clone(base.Files)
		r.Collaborators = maps.Clone(base.Collaborators)
		r.Collaborators[weekAdmin] = "admin"
		switch name {
		case weekProtected:
			r.Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{ciCheck}}}
		case weekEnvironment:
			r.Files["scripts/env-setup.sh"] = widgetLintSetup
			r.Files["test.sh"] = strings.Replace(r.Files["test.sh"], "\n", "\nwidget-lint widgets.sh || exit 1\n", 1)
			r.Files[repoconfig.Path] += "environment:\n  setup: scripts/env-setup.sh\n"
			repoconfigtest.Valid(t, "gizmos' "+repoconfig.Path, []byte(r.Files[repoconfig.Path]))
		}
		s.Repositories = append(s.Repositories, r)
	}
	s.Installations = nil
	return s
}

// week is Bumper's week on this host: the emulator with faults, two serve replicas
// behind a balancer, the local runner executing several real runs at once.
type week struct {
	t        *testing.T
	ctx      context.Context
	plan     weekPlan
	e        *ghemu.Emulator
	bin      string
	runDir   string
	slug     string
	sealer   *ledger.Sealer
	replicas []*replica
	lb       *balancer
	calls    *weekCalls
	people   map[string]*gogithub.Client

	mu       sync.Mutex
	outcomes map[string]*itemOutcome // by "repo#n"
	kills    map[string]int          // what the week killed, by kind
	// killedRuns are the workflow runs whose runner the week killed: their failure is
	// the week's doing.
	killedRuns map[int64]bool
	// ciDone are gadgets' CI's conclusions, by "repo@head".
	ciDone map[string]string
}

// itemOutcome is what became of one work item.
type itemOutcome struct {
	repo      string
	issue     int
	scenario  string
	note      string // the name of the note its agent writes
	state     ledger.State
	reason    string
	approvals int // the writers' /approve comments meant to start a run
	lost      int // of those, how many never started one
	pulls     []int
	merged    bool
}

func TestWeek(t *testing.T) {
	testgate.Slow(t, "a team's week: serve replicas, a runner host running several microVMs at once under TCG, faults")
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	testgate.Command(t, "nft", "nftables")
	testgate.Command(t, "git", "git")
	plan := weekPlanFromEnv(t)
	began := time.Now()
	imagetest.Image(t) // the runs' base image, in the shared cache
	bin := imagetest.AgentBinary(t)
	w := &week{t: t, ctx: context.Background(), plan: plan, bin: bin, runDir: t.TempDir(), calls: newWeekCalls(),
		outcomes: map[string]*itemOutcome{}, kills: map[string]int{}, killedRuns: map[int64]bool{}, people: map[string]*gogithub.Client{}, ciDone: map[string]string{}}

	faults, err := ghemu.LoadFaults("testdata/week-faults.yml")
	if err != nil {
		t.Fatal(err)
	}
	if v := os.Getenv("BUMPER_WEEK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("BUMPER_WEEK_SEED=%q: want a number", v)
		}
		faults.Seed = &n
	}
	// The balancer's address goes into the runner's environment before the replicas exist.
	lb := newBalancer()
	lbSrv := httptest.NewServer(lb)
	t.Cleanup(lbSrv.Close)
	w.lb = lb
	runner := &ghemu.Runner{
		// The runner host builds its own images (gizmos' environment among them) in the
		// shared cache, where imagetest built the base image, unless the week points the
		// runs at another cache for a while (a full disk, in the full week).
		Command: []string{"sh", "-c", `cache=$(cat "$0.cache" 2>/dev/null) || cache=$INPUT_CACHE; INPUT_CACHE=$cache INPUT_OUT="$GITHUB_WORKSPACE/bumper-out" exec "$1" run`,
			filepath.Join(w.runDir, "week"), bin},
		WorkDir:  w.runDir,
		Timeout:  15 * time.Minute,
		Parallel: plan.parallel,
		Env: []string{
			"INPUT_URL=" + lbSrv.URL, "INPUT_IMAGE=", "INPUT_CACHE=" + imagetest.CacheDir(),
			"INPUT_ACCEL=tcg", "INPUT_ALLOW_TCG=true", "INPUT_MEMORY=1G", "INPUT_CPUS=2",
			"ANTHROPIC_API_KEY=" + modelKey,
			// The host's limit: two VMs at once, whatever else this machine runs, so a third
			// run waits for a slot (sandbox/slots), saying so.
			"BUMPER_MAX_VMS=2", "BUMPER_SLOTS_DIR=" + filepath.Join(w.runDir, "slots"),
		},
	}
	w.e = emutest.New(t, ghemu.Options{Seed: weekSeed(t, plan.repos), Runner: runner, Faults: faults}, emutest.Observe(w.calls.observe))
	for _, u := range w.e.Users() {
		w.calls.person(u.Token)
	}
	t.Logf("the week (%s): %d items over %d repositories, %d runs at once, fault seed %d", plan.name, plan.items, len(plan.repos), plan.parallel, w.e.Faults().Seed())

	// The admin's start.
	dir, slug := adminSetup(t, w.e, bin, weekAdmin, plan.repos)
	w.slug = slug
	cfg := weekServeConfig(t, dir)
	loaded, err := app.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := loaded.RunTokenKeyBytes()
	if err != nil {
		t.Fatal(err)
	}
	if w.sealer, err = ledger.NewSealer(key); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(w.runDir, "serve-logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	w.replicas = []*replica{newReplica(t, bin, cfg, logDir), newReplica(t, bin, cfg, logDir)}
	lb.backends = []string{w.replicas[0].addr, w.replicas[1].addr}
	w.e.SetWebhookURL(lbSrv.URL + "/api/github/hook")
	setupTime := time.Since(began)

	sampler := startSampler(bin)
	weekBegan := time.Now()
	w.drive()
	w.settleWeek()
	sampler.finish()
	for _, r := range w.replicas {
		r.notePeak(r.pid())
	}
	figures := w.figures(sampler, time.Since(weekBegan), setupTime)
	table := figures.table()
	t.Log("\n" + table)
	if out := os.Getenv("BUMPER_WEEK_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Errorf("writing the table to BUMPER_WEEK_OUT: %v", err)
		}
	}
	for _, broken := range figures.broken() {
		t.Error(broken)
	}
	if keep := os.Getenv("BUMPER_WEEK_KEEP"); keep != "" && t.Failed() {
		// The week's directory (serve's logs, each run's job log and output) goes with the
		// test; a soak that broke a promise keeps a copy to read.
		if out, err := exec.Command("cp", "-a", w.runDir, keep).CombinedOutput(); err != nil {
			t.Errorf("keeping the week's directory in %s: %v: %s", keep, err, out)
		} else {
			t.Logf("the week's directory (serve's logs, the runs' job logs and outputs) is kept in %s", keep)
		}
	}
}

// drive plays the week: the items, a few at a time, with the replicas' kills between.
func (w *week) drive() {
	sem := make(chan struct{}, w.plan.inFlight)
	var wg sync.WaitGroup
	ci, stopCI := context.WithCancel(w.ctx)
	defer stopCI()
	if slices.Contains(w.plan.repos, weekProtected) {
		go w.runCI(ci, weekProtected)
	}
	killAt := map[int]int{} // item index → replica to kill before starting it
	for k := range w.plan.serveKills {
		killAt[(k+1)*w.plan.items/(w.plan.serveKills+1)] = k % len(w.replicas)
	}
	runnerKills := 0
	for i := range w.plan.items {
		if r, ok := killAt[i]; ok {
			wg.Add(1)
			go func() { defer wg.Done(); w.killReplica(r) }()
		}
		sc := scenarios[i%len(scenarios)]
		if sc == scenarioRunnerKill {
			if runnerKills >= w.plan.runnerKills {
				sc = scenarioStop
			}
			runnerKills++
		}
		if w.plan.cacheFull && i == w.plan.items/3 {
			// For half a minute, as long as an operator takes to notice and prune.
			w.fillCache()
			wg.Add(1)
			go func() { defer wg.Done(); time.Sleep(30 * time.Second); w.freeCache() }()
		}
		repo := w.repoFor(i, sc)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.item(i, repo, sc)
		}()
		time.Sleep(500 * time.Millisecond)
	}
	wg.Wait()
}

// fullCache is the small file system the week fills and points the runs' image cache
// at, for a few items.
func (w *week) fullCache() string { return filepath.Join(w.runDir, "full-cache") }

// fillCache mounts a 64 MiB tmpfs, fills it to its last few MiB and points the runs'
// image cache there: the runs that start meanwhile find no room for their image.
func (w *week) fillCache() {
	dir := w.fullCache()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir).CombinedOutput(); err != nil {
		w.t.Fatalf("mounting the small cache: %v: %s", err, out)
	}
	w.t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	if out, err := exec.Command("fallocate", "-l", "60M", filepath.Join(dir, "ballast")).CombinedOutput(); err != nil {
		w.t.Fatalf("filling the small cache: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(w.runDir, "week.cache"), []byte(dir), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.note("image cache's file system full", 0)
	w.t.Logf("week: the runs' image cache is a full 64 MiB file system")
}

// freeCache points the runs back at the shared cache.
func (w *week) freeCache() {
	if err := os.Remove(filepath.Join(w.runDir, "week.cache")); err != nil {
		w.t.Error(err)
	}
	w.t.Logf("week: the runs' image cache is the shared one again")
}

// killReplica kills one serve replica with SIGKILL, as a node's failure or a careless
// deploy does, and starts it again a few seconds later.
func (w *week) killReplica(i int) {
	r := w.replicas[i]
	w.t.Logf("week: SIGKILL serve replica %d (pid %d)", i, r.pid())
	r.kill(syscall.SIGKILL)
	w.note("serve replica SIGKILL", 0)
	time.Sleep(3 * time.Second)
	r.start()
	w.t.Logf("week: serve replica %d is back", i)
}

func (w *week) note(kind string, run int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kills[kind]++
	if run != 0 {
		w.killedRuns[run] = true
	}
}

// settleWeek waits until no webhook is on its way and no run is queued or running.
func (w *week) settleWeek() {
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		busy := false
		for _, repo := range w.plan.repos {
			runs, _ := w.e.Runs(ghemu.DefaultOrg, repo)
			for _, r := range runs {
				if r.Status != "completed" {
					busy = true
				}
			}
		}
		if !busy && w.e.WaitWebhooks(ctx) == nil {
			return
		}
		time.Sleep(time.Second)
	}
	w.t.Error("the week did not settle within 5 minutes: runs still going")
}

// patient retries what GitHub asks to retry, as a person's client does: a 502 or 503
// after a moment, a rate limit after its Retry-After (never before).
type patient struct{ base http.RoundTripper }

func (p patient) RoundTrip(r *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req := r.Clone(r.Context())
		if r.GetBody != nil {
			body, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		resp, err := p.base.RoundTrip(req)
		if err != nil || attempt == 10 {
			return resp, err
		}
		var wait time.Duration
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable:
			wait = 300 * time.Millisecond
		case http.StatusForbidden, http.StatusTooManyRequests:
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				wait = time.Duration(s)*time.Second + 200*time.Millisecond
			}
		}
		if wait == 0 {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(wait)
	}
}

// user is a person's client, patient with GitHub's faults.
func (w *week) user(login string) *gogithub.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.people[login]; ok {
		return c
	}
	c := gogithub.NewClient(&http.Client{Transport: patient{http.DefaultTransport}}).WithAuthToken(w.e.UserToken(login))
	c.BaseURL, _ = url.Parse(w.e.BaseURL() + "/")
	w.people[login] = c
	return c
}

// record reads a work item's record from its status comment; nil when there is none yet.
func (w *week) record(repo string, n int) *ledger.Record {
	cs, _, err := w.user(ghemu.DefaultMaintainer).Issues.ListComments(w.ctx, ghemu.DefaultOrg, repo, n,
		&gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}})
	if err != nil {
		return nil
	}
	for _, c := range cs {
		if ledger.IsStatusComment(c.GetBody()) && c.GetUser().GetLogin() == w.slug+"[bot]" {
			if r, err := w.sealer.Decode(c.GetBody()); err == nil {
				return r
			}
		}
	}
	return nil
}

// waitFor waits until the item's record satisfies ok, and returns it; the last record
// seen (perhaps nil) and false after limit.
func (w *week) waitFor(repo string, n int, limit time.Duration, ok func(*ledger.Record) bool) (*ledger.Record, bool) {
	deadline := time.Now().Add(limit)
	var r *ledger.Record
	for {
		if r = w.record(repo, n); r != nil && ok(r) {
			return r, true
		}
		if time.Now().After(deadline) {
			return r, false
		}
		time.Sleep(time.Second)
	}
}

func inState(states ...ledger.State) func(*ledger.Record) bool {
	return func(r *ledger.Record) bool { return slices.Contains(states, r.State) }
}

// stateOf says a record's state and reason, for the log.
func stateOf(r *ledger.Record) string {
	if r == nil {
		return "no status comment"
	}
	if r.Reason != "" {
		return fmt.Sprintf("%s (%s)", r.State, r.Reason)
	}
	return string(r.State)
}
