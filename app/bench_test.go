package app

import (
	"net/http"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu"
)

// callLog counts the requests `serve` makes, by route shape.
type callLog struct {
	mu          sync.Mutex
	routes      map[string]int
	n           *atomic.Int64
	notModified atomic.Int64
}

var digits = regexp.MustCompile(`/[0-9]+`)

func (c *callLog) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	resp, err := http.DefaultTransport.RoundTrip(r)
	status := "error"
	if err == nil {
		status = resp.Status
		if resp.StatusCode == http.StatusNotModified {
			c.notModified.Add(1)
		}
	}
	c.mu.Lock()
	c.routes[r.Method+" "+digits.ReplaceAllString(r.URL.Path, "/N")+" → "+status]++
	c.mu.Unlock()
	return resp, err
}

// BenchmarkLabelToDispatch measures, against the emulator with real signed webhooks,
// one work item at a time from label to dispatch: deliveries handled per second, the
// p50/p99 time to handle a delivery, and the GitHub API calls per work item.
func BenchmarkLabelToDispatch(b *testing.B) {
	h := newHarness(b, nil)
	var mu sync.Mutex
	var lat []time.Duration
	log := &callLog{routes: map[string]int{}, n: &h.calls}
	h.stop()
	srv, err := New(h.ctx, h.cfg, Options{Transport: log, OnHandled: func(_ string, d time.Duration) {
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
	}})
	if err != nil {
		b.Fatal(err)
	}
	h.srv = srv
	h.hs = newTestServer(srv)
	h.e.SetWebhookURL(h.hs.URL + h.cfg.Server.WebhookPath)
	item := func() {
		n := h.openIssue("Make widgets 4", "The widget count should be 4.")
		h.label(ghemu.DefaultMaintainer, n, "agent:implement")
		h.comment(ghemu.DefaultMaintainer, n, "/approve")
	}
	item() // warm: the App's login and the installation token are fetched once
	mu.Lock()
	lat = lat[:0]
	mu.Unlock()
	log.mu.Lock()
	log.routes = map[string]int{}
	log.mu.Unlock()
	calls0 := h.calls.Load()
	log.notModified.Store(0)
	runs0 := len(h.runs())
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		item()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if got := len(h.runs()) - runs0; got != b.N {
		b.Fatalf("%d dispatches for %d work items", got, b.N)
	}
	mu.Lock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	n := len(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(n*99)/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[n-1].Microseconds())/1000, "max-ms")
	mu.Unlock()
	b.ReportMetric(float64(h.calls.Load()-calls0)/float64(b.N), "api-calls/item")
	b.ReportMetric(float64(log.notModified.Load())/float64(b.N), "304s/item")
	log.mu.Lock()
	keys := make([]string, 0, len(log.routes))
	for k := range log.routes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.Logf("%6.2f per item  %s", float64(log.routes[k])/float64(b.N), k)
	}
	log.mu.Unlock()
}
