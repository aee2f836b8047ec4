package e2e

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/faults"
)

// weekCalls counts Bumper's REST calls to the emulator by the work item their path
// names (an issue's or a pull request's number), apart from the people's.
type weekCalls struct {
	mu     sync.Mutex
	people map[string]bool // the seeded users' tokens
	creds  map[string]bool // their credentials as the faults name them
	byPath map[string]int  // "repo#n" of issues and "repo!n" of pulls → calls
	total  int             // all of Bumper's REST calls
}

func newWeekCalls() *weekCalls {
	return &weekCalls{people: map[string]bool{}, creds: map[string]bool{}, byPath: map[string]int{}}
}

// person notes a seeded user's token: their calls are the test's, not Bumper's.
func (c *weekCalls) person(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.people[token] = true
	sum := sha256.Sum256([]byte(token))
	c.creds["token:"+hex.EncodeToString(sum[:6])] = true
}

var itemPath = regexp.MustCompile(`^(?:/api/v3)?/repos/[^/]+/([^/]+)/(issues|pulls)/([0-9]+)(/|$)`)

func (c *weekCalls) observe(r *http.Request) {
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if kindOf(r.URL.Path) != kindAPI {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.people[tok] {
		return
	}
	c.total++
	if m := itemPath.FindStringSubmatch(r.URL.Path); m != nil {
		sep := "#"
		if m[2] == "pulls" {
			sep = "!"
		}
		c.byPath[m[1]+sep+m[3]]++
	}
}

// weekFigures are the week's promises and measures.
type weekFigures struct {
	plan                          weekPlan
	items                         int
	states                        map[string]int
	unfinished                    []string // items neither final nor waiting with a reason
	dupDispatches, dupRuns        int
	dupPulls                      int
	dups                          []string // which, for the log
	approvals, lost               int
	faults                        faults.Counts
	early                         []string
	leftovers                     []string
	callsP50, callsP95            int
	callsMean                     float64
	overheadP50, overheadP95      time.Duration
	runs, killedRuns              int
	runsPerHour                   float64
	peakKiB, peakRunKiB, peakQEMU int64
	peakServeKiB                  int64
	wall, setup                   time.Duration
	kills                         map[string]int
	lbSkipped                     int64
	// fullCacheRuns are the runs that found the image cache full (and were refused).
	fullCacheRuns int
	// scenarios counts the items by scenario; rounds the runs by stage.
	scenarios, rounds map[string]int
	// envBuilt and envFound are gizmos' runs that built its environment and that found
	// it; envMissed its runs that published a head without booting it.
	envBuilt, envFound int
	envMissed          []string
}

// countEnvironment notes whether a run of gizmos built its environment or found it, and
// whether one that published a head booted it.
func (w *week) countEnvironment(f *weekFigures, o *itemOutcome, run ghemu.RunInfo, ev *evidence.Evidence) {
	env := ev.Environment
	switch {
	case env != nil && env.Built:
		f.envBuilt++
	case env != nil && env.ImageDigest != "":
		f.envFound++
	}
	if ev.HeadCommit != "" && (env == nil || ev.Sandbox == nil || env.ImageDigest == "" || ev.Sandbox.ImageDigest != env.ImageDigest) {
		f.envMissed = append(f.envMissed, fmt.Sprintf("%s#%d's run %d published %.12s without booting its environment", o.repo, o.issue, run.ID, ev.HeadCommit))
	}
}

func (w *week) figures(s *hostSampler, wall, setup time.Duration) weekFigures {
	f := weekFigures{plan: w.plan, states: map[string]int{}, scenarios: map[string]int{}, rounds: map[string]int{}, wall: wall, setup: setup, kills: w.kills, lbSkipped: w.lb.skipped.Load()}
	f.faults = w.e.Faults().Counts()
	for _, e := range w.e.Faults().EarlyRetryLog() {
		if !w.calls.creds[e.Credential] {
			f.early = append(f.early, fmt.Sprintf("%s %s %v early", e.Method, e.Path, e.Early.Round(time.Millisecond)))
		}
	}
	f.leftovers = s.leftovers()
	if w.plan.cacheFull {
		f.leftovers = append(f.leftovers, w.cacheLeftovers()...)
	}
	f.peakKiB, f.peakRunKiB, f.peakQEMU = s.peakKiB, s.peakRunKiB, s.peakQEMUKiB
	for _, r := range w.replicas {
		f.peakServeKiB = max(f.peakServeKiB, r.peakRSS)
	}

	var perItem []int
	var overheads []time.Duration
	for _, key := range slices.Sorted(maps.Keys(w.outcomes)) {
		o := w.outcomes[key]
		f.items++
		f.scenarios[o.scenario]++
		f.approvals += o.approvals
		f.lost += o.lost
		f.states[string(o.state)]++
		if !o.state.Terminal() && o.state != ledger.InReview && o.state != ledger.AwaitingApproval {
			f.unfinished = append(f.unfinished, fmt.Sprintf("%s (%s) is %s: %s", key, o.scenario, o.state, o.reason))
		}
		if o.state == ledger.Error {
			f.unfinished = append(f.unfinished, fmt.Sprintf("%s (%s) fell into bumper:error: %s", key, o.scenario, o.reason))
		}
		calls := w.calls.byPath[key]
		for _, p := range o.pulls {
			calls += w.calls.byPath[fmt.Sprintf("%s!%d", o.repo, p)]
		}
		perItem = append(perItem, calls)

		// Every run the item dispatched, by attempt and stage: a second one is a duplicate.
		seen := map[string]int64{}
		for _, run := range w.itemRuns(o) {
			f.runs++
			if w.killedRuns[run.ID] {
				f.killedRuns++
			}
			k := run.Inputs["attempt"] + "/" + run.Inputs["stage"]
			if first, ok := seen[k]; ok {
				f.dupDispatches++
				if run.RunnerName != "" {
					f.dupRuns++
				}
				f.dups = append(f.dups, fmt.Sprintf("%s (%s): attempt %s dispatched again, runs %d and %d", key, o.scenario, k, first, run.ID))
			} else {
				seen[k] = run.ID
			}
			if w.plan.cacheFull {
				if log, _ := w.e.RunLog(ghemu.DefaultOrg, o.repo, run.ID); strings.Contains(string(log), "free in "+w.fullCache()) {
					f.fullCacheRuns++
				}
			}
			f.rounds[run.Inputs["stage"]]++
			ev, _ := w.evidence(o.repo, run)
			if d, ok := w.overhead(o.repo, run, ev); ok {
				overheads = append(overheads, d)
			}
			if o.repo == weekEnvironment && ev != nil {
				w.countEnvironment(&f, o, run, ev)
			}
		}
		pulls, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, o.repo, nil)
		if err == nil {
			mine := 0
			for _, p := range pulls {
				if strings.Contains(p.GetBody(), fmt.Sprintf("#%d", o.issue)) && strings.HasPrefix(p.GetHead().GetRef(), "bumper/") &&
					strings.HasSuffix(p.GetHead().GetRef(), "-"+strconv.Itoa(o.issue)) {
					mine++
				}
			}
			if mine > 1 {
				f.dupPulls += mine - 1
			}
		}
	}
	if len(perItem) > 0 {
		f.callsMean = float64(w.calls.total) / float64(len(perItem))
	}
	f.callsP50, f.callsP95 = percentile(perItem, 50), percentile(perItem, 95)
	f.overheadP50, f.overheadP95 = percentile(overheads, 50), percentile(overheads, 95)
	if wall > 0 {
		f.runsPerHour = float64(f.runs) / wall.Hours()
	}
	return f
}

// cacheLeftovers is what the runs that met the full cache left in it: nothing but the
// week's ballast, the cache's empty directories, its lock and the image build's note of
// the kernel it resolved (a few hundred bytes, written before the free space is checked).
func (w *week) cacheLeftovers() []string {
	var out []string
	_ = filepath.WalkDir(w.fullCache(), func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(w.fullCache(), p)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("the full cache: %v", err))
		case rel == "." || rel == "ballast" || rel == ".lock" || rel == ".resolved.json":
		case d.IsDir() && (rel == "snapshots" || rel == "images" || rel == "tmp"):
		default:
			out = append(out, "in the full cache: "+rel)
		}
		return nil
	})
	return out
}

// evidence is a run's evidence, when it wrote one.
func (w *week) evidence(repo string, run ghemu.RunInfo) (*evidence.Evidence, bool) {
	out := filepath.Join(w.runDir, strconv.FormatInt(run.ID, 10), "_work", repo, repo, "bumper-out")
	raw, err := os.ReadFile(filepath.Join(out, "evidence.json"))
	var ev evidence.Evidence
	if err != nil || json.Unmarshal(raw, &ev) != nil {
		return nil, false
	}
	return &ev, true
}

// overhead is a finished run's platform time from its evidence: every phase but the
// agent's own (and the revocation and report, which come after the pull request).
func (w *week) overhead(repo string, run ghemu.RunInfo, ev *evidence.Evidence) (time.Duration, bool) {
	done, err := w.e.Run(ghemu.DefaultOrg, repo, run.ID)
	if err != nil || done.Conclusion != "success" || ev == nil || ev.HeadCommit == "" {
		return 0, false
	}
	var d time.Duration
	for _, p := range ev.Phases {
		switch p.Name {
		case evidence.PhaseAgent, evidence.PhaseRevoke, evidence.PhaseReport:
		default:
			d += time.Duration(p.DurationMS) * time.Millisecond
		}
	}
	return d, true
}

// percentile is the p-th percentile of xs (nearest rank, low side); zero for none.
func percentile[T cmp.Ordered](xs []T, p int) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Sorted(slices.Values(xs))
	return s[(len(s)-1)*p/100]
}

// broken lists every promise the week broke.
func (f weekFigures) broken() []string {
	var out []string
	for _, u := range f.unfinished {
		out = append(out, "unfinished: "+u)
	}
	if f.dupDispatches+f.dupRuns+f.dupPulls > 0 {
		out = append(out, fmt.Sprintf("duplicates: %d dispatches, %d runs, %d pull requests: %s", f.dupDispatches, f.dupRuns, f.dupPulls, strings.Join(f.dups, "; ")))
	}
	if f.lost > 0 {
		out = append(out, fmt.Sprintf("%d approvals lost", f.lost))
	}
	for _, e := range f.early {
		out = append(out, "a request before its Retry-After: "+e)
	}
	for _, l := range f.leftovers {
		out = append(out, "left on the host: "+l)
	}
	out = append(out, f.envMissed...)
	if slices.Contains(f.plan.repos, weekEnvironment) && f.envBuilt+f.envFound == 0 {
		out = append(out, "no run of "+weekEnvironment+" built or found its environment")
	}
	return out
}

func mib(kib int64) string { return fmt.Sprintf("%d MiB", kib/1024) }

// table is the week's figures as docs/week.md keeps them.
func (f weekFigures) table() string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	fmt.Fprintf(&b, "| the %s week | |\n|---|---|\n", f.plan.name)
	states := make([]string, 0, len(f.states))
	for _, k := range slices.Sorted(maps.Keys(f.states)) {
		states = append(states, fmt.Sprintf("%s %d", k, f.states[k]))
	}
	row("work items, repositories, runs at once", fmt.Sprintf("%d, %d, %d", f.items, len(f.plan.repos), f.plan.parallel))
	row("scenarios played", countLine(f.scenarios, ""))
	row("items final or waiting with a reason", fmt.Sprintf("%d of %d (%s)", f.items-len(f.unfinished), f.items, strings.Join(states, ", ")))
	row("duplicate dispatches, runs, pull requests", fmt.Sprintf("%d, %d, %d", f.dupDispatches, f.dupRuns, f.dupPulls))
	row("approvals (and /retry) lost", fmt.Sprintf("%d of %d", f.lost, f.approvals))
	row("requests sent before their Retry-After", strconv.Itoa(len(f.early)))
	row("leftovers on the host (QEMU, netns with TAP and nftables, veths, mounts, run dirs, overlays)", strconv.Itoa(len(f.leftovers)))
	row("faults injected", countLine(f.faults.ByKind, ""))
	row("kills and a full disk", countLine(f.kills, "×"))
	if f.plan.cacheFull {
		row("runs that found the image cache full (refused before anything was written)", strconv.Itoa(f.fullCacheRuns))
	}
	row("GitHub REST calls per item naming it, p50 / p95", fmt.Sprintf("%d / %d", f.callsP50, f.callsP95))
	row("all of Bumper's REST calls per item", fmt.Sprintf("%.1f", f.callsMean))
	row("platform overhead per run (runner's phases, agent excluded), p50 / p95", fmt.Sprintf("%.2f s / %.2f s", f.overheadP50.Seconds(), f.overheadP95.Seconds()))
	row("runs (of which killed by the week)", fmt.Sprintf("%d (%d)", f.runs, f.killedRuns))
	row("runs by stage (rounds on the pull requests: fix, revise, update)", countLine(f.rounds, ""))
	if slices.Contains(f.plan.repos, weekEnvironment) {
		row(weekEnvironment+"' environment: runs that built it, found it", fmt.Sprintf("%d, %d", f.envBuilt, f.envFound))
	}
	row("runs per hour on this host", fmt.Sprintf("%.0f", f.runsPerHour))
	row("peak memory of Bumper's processes at once (serve ×2, runs, QEMU)", mib(f.peakKiB))
	row("peak of one serve, one `bumper run`, one QEMU", fmt.Sprintf("%s, %s, %s", mib(f.peakServeKiB), mib(f.peakRunKiB), mib(f.peakQEMU)))
	row("balancer: connections a down replica refused", strconv.FormatInt(f.lbSkipped, 10))
	row("wall time (the admin's setup; the week)", fmt.Sprintf("%s; %s", f.setup.Round(time.Second), f.wall.Round(time.Second)))
	return b.String()
}

// countLine is counts by name, in name order: "a 1, b 2", or with times "a ×1, b ×2".
func countLine[K ~string](m map[K]int, times string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %s%d", k, times, m[k]))
	}
	return strings.Join(parts, ", ")
}
