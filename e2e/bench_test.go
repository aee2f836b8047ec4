package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
)

// BenchmarkRunOverhead measures what Bumper adds to an agent's work: from the dispatch
// (the maintainer's /approve handled, the run created) to the pull request opened, minus
// the agent's own time, with an agent that makes its change at once and a verification
// that passes in round 1; split by phase. It also counts GitHub's REST API calls from
// the label to the pull request (serve's and the runner's together). Under TCG; the VM
// restores from a snapshot made before the timer starts.
//
//	go test -run '^$' -bench RunOverhead -benchtime 3x ./e2e/
func BenchmarkRunOverhead(b *testing.B) {
	w := newWorld(b)
	// A first run makes the snapshot and warms the caches, as on a runner that has run
	// before.
	w.benchRun("warm-up")
	b.ResetTimer()
	phases := map[evidence.PhaseName]time.Duration{}
	var overhead, start time.Duration
	var apiCalls, apiTotal, gitCalls int
	for i := 0; i < b.N; i++ {
		r := w.benchRun(fmt.Sprintf("run %d", i))
		overhead += r.overhead
		start += r.start
		for k, v := range r.phases {
			phases[k] += v
		}
		apiCalls += r.untilPull
		apiTotal += r.calls[kindAPI]
		gitCalls += r.calls[kindGit]
	}
	n := time.Duration(b.N)
	b.ReportMetric((overhead / n).Seconds(), "overhead-s/run")
	b.ReportMetric(float64(apiCalls)/float64(b.N), "api-calls-to-pr/item")
	b.ReportMetric(float64(apiTotal)/float64(b.N), "api-calls-to-end/item")
	b.ReportMetric(float64(gitCalls)/float64(b.N), "git-requests/item")
	b.ReportMetric((start / n).Seconds(), "runner-start-s/run")
	names := make([]string, 0, len(phases))
	for k := range phases {
		names = append(names, string(k))
	}
	sort.Strings(names)
	var split []string
	for _, k := range names {
		d := phases[evidence.PhaseName(k)] / n
		split = append(split, fmt.Sprintf("%s %.2fs", k, d.Seconds()))
		b.ReportMetric(d.Seconds(), k+"-s/run")
	}
	w.calls.mu.Lock()
	var paths []string
	for k, v := range w.calls.api {
		paths = append(paths, fmt.Sprintf("%5.1f %s", float64(v)/float64(b.N+1), k))
	}
	w.calls.mu.Unlock()
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	// Printed, not logged: a benchmark's log is cut at a few lines.
	fmt.Printf("REST calls per item (serve's and the runner's), by endpoint:\n%s\n", strings.Join(paths, "\n"))
	b.Logf("per run: overhead %.2fs = runner start %.2fs + phases (agent excluded): %s", (overhead / n).Seconds(), (start / n).Seconds(), strings.Join(split, ", "))
}

type benchResult struct {
	overhead, start time.Duration
	phases          map[evidence.PhaseName]time.Duration
	calls           map[string]int
	// untilPull are the REST calls from the label to the pull request opened.
	untilPull int
}

// benchRun takes one issue from label to pull request and measures it.
func (w *world) benchRun(name string) benchResult {
	w.t.Helper()
	before := w.calls.snapshot()
	n := w.openIssue("Count to 4 ("+name+")", "test.sh wants 4 widgets.\n\nscenario: direct")
	w.label(n, "agent:implement")
	// From the /approve comment: serve's handling and the dispatch count as overhead.
	dispatched := time.Now()
	run := w.approve(n)
	done := w.wait(run)
	if done.Conclusion != "success" {
		w.t.Fatalf("%s ended %s:\n%s", name, done.Conclusion, w.jobLog(run))
	}
	after := w.calls.snapshot()
	ev := readEvidence(w.t, w.out(run))
	r := benchResult{phases: map[evidence.PhaseName]time.Duration{}, calls: map[string]int{}}
	for k, v := range after {
		r.calls[k] = v - before[k]
	}
	w.calls.mu.Lock()
	r.untilPull = w.calls.atPull - before[kindAPI]
	w.calls.mu.Unlock()
	var prOpened time.Time
	for _, p := range ev.Phases {
		d := time.Duration(p.DurationMS) * time.Millisecond
		if p.Name == evidence.PhasePullRequest {
			prOpened = p.EndedAt
		}
		if p.Name == evidence.PhaseAgent || p.Name == evidence.PhaseRevoke || p.Name == evidence.PhaseReport {
			continue // the agent's own time; revoke and report come after the pull request
		}
		r.phases[p.Name] += d
	}
	var agent time.Duration
	for _, p := range ev.Phases {
		if p.Name == evidence.PhaseAgent {
			agent += time.Duration(p.DurationMS) * time.Millisecond
		}
	}
	r.start = ev.Phases[0].StartedAt.Sub(dispatched)
	r.overhead = prOpened.Sub(dispatched) - agent
	return r
}
