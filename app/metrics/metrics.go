// Package metrics is serve's Prometheus instrumentation: one registry per Server (no
// global state, so two servers in one process, as in tests, count apart), the
// collectors, and the adapters the rest of the App reports through. The domain code
// (app/workitem) and the HTTP endpoints (app/runnerapi) only know small observer
// interfaces; this package implements them.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace starts every metric's name.
const Namespace = "bumper"

// Outcomes of a webhook delivery (the outcome label of bumper_webhook_deliveries_total).
const (
	// DeliveryHandled: a handler took the delivery and returned without error (a
	// redelivery of a delivery already handled counts here too: it changed nothing).
	DeliveryHandled = "handled"
	// DeliveryFailed: the handler returned an error; GitHub saw 202 already, so only a
	// redelivery retries it.
	DeliveryFailed = "failed"
	// DeliveryIgnored: a signed delivery of an event the App has no handler for.
	DeliveryIgnored = "ignored"
	// DeliveryRejected: a delivery without a valid signature (or without an event
	// type), answered 400.
	DeliveryRejected = "rejected"
	// DeliveryDropped: the queue was full (or serve was stopping); GitHub saw an error.
	DeliveryDropped = "dropped"
)

// Metrics holds serve's registry and collectors.
type Metrics struct {
	reg        *prometheus.Registry
	webhooks   *prometheus.CounterVec
	handling   *prometheus.HistogramVec
	dispatches *prometheus.CounterVec
	exchanges  *prometheus.CounterVec
	api        *prometheus.CounterVec
	remaining  *prometheus.GaugeVec
	outcomes   *prometheus.CounterVec
	spend      prometheus.Counter
	capLeft    *prometheus.GaugeVec
}

// Outcomes are the final states bumper_items_outcome_total counts, each reported from
// the start (at zero) so a rate over one sees 0 rather than no series.
var Outcomes = []string{"done", "failed", "stopped", "error"}

// New builds the registry. itemsByState is called at every scrape and returns the
// number of indexed work items in each state; every state it names is reported, zero
// included, so an alert on a state sees 0 rather than no series.
func New(itemsByState func() map[string]int) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
			Name: "webhook_deliveries_total",
			Help: "Webhook deliveries received, by event and outcome (handled, failed, ignored, rejected, dropped)."},
			[]string{"event", "outcome"}),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
			Name: "webhook_handling_seconds",
			Help: "Time from a worker taking a webhook delivery to its handler returning, by event.",
			// Handling is a few GitHub round trips: tens of milliseconds to seconds.
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"event"}),
		dispatches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
			Name: "dispatches_total",
			Help: "Runner workflow dispatches attempted, by stage and result (dispatched, elsewhere, failed, error)."},
			[]string{"stage", "result"}),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
			Name: "token_exchanges_total",
			Help: "Runner token exchanges, by outcome (granted, refused, failed) and, for refusals, the reason kind."},
			[]string{"outcome", "reason"}),
		api: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
			Name: "github_api_requests_total",
			Help: "Requests serve sent to GitHub's API (below the cache: each reached GitHub), by method and status class (2xx, 3xx, 4xx, 5xx, error)."},
			[]string{"method", "status_class"}),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
			Name: "github_rate_limit_remaining",
			Help: "X-RateLimit-Remaining of GitHub's last response for each credential (the App, or the installation on an account) and rate-limit resource."},
			[]string{"account", "resource"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace,
			Name: "items_outcome_total",
			Help: "Work items that reached a final state, by that state (done: its pull request merged; failed; stopped, closed included; error)."},
			[]string{"outcome"}),
		capLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace,
			Name: "cap_remaining_usd",
			Help: "What one of serve's daily caps (limit: limits.repo_daily_usd or limits.installation_daily_usd) leaves of a scope's UTC day (a repository, or an installation's account), in US dollars, as this replica last held or settled a run."},
			[]string{"limit", "scope"}),
		spend: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "spend_usd_total",
			Help: "Model spend of runs, in US dollars, as the runs reported it with their evidence (the firewall's metered figure)."}),
	}
	for _, o := range Outcomes {
		m.outcomes.WithLabelValues(o)
	}
	m.reg.MustRegister(m.webhooks, m.handling, m.dispatches, m.exchanges, m.api, m.remaining, m.outcomes, m.spend, m.capLeft,
		&itemsCollector{desc: prometheus.NewDesc(Namespace+"_work_items",
			"Work items in serve's index, by state (read from the index at scrape time).", []string{"state"}, nil),
			count: itemsByState},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry itself, for a caller that adds its own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Delivery counts one webhook delivery's outcome.
func (m *Metrics) Delivery(event, outcome string) {
	m.webhooks.WithLabelValues(event, outcome).Inc()
}

// Handled records a handled delivery: its handling time and whether it failed.
func (m *Metrics) Handled(event string, elapsed time.Duration, err error) {
	m.handling.WithLabelValues(event).Observe(elapsed.Seconds())
	outcome := DeliveryHandled
	if err != nil {
		outcome = DeliveryFailed
	}
	m.Delivery(event, outcome)
}

// Dispatch implements workitem.Observer.
func (m *Metrics) Dispatch(stage, result string) {
	m.dispatches.WithLabelValues(stage, result).Inc()
}

// Outcome implements workitem.Observer.
func (m *Metrics) Outcome(state string) {
	m.outcomes.WithLabelValues(state).Inc()
}

// Spend implements workitem.Observer.
func (m *Metrics) Spend(microUSD int64) {
	if microUSD > 0 {
		m.spend.Add(float64(microUSD) / 1e6)
	}
}

// CapLeft implements workitem.Observer.
func (m *Metrics) CapLeft(limit, scope string, microUSD int64) {
	m.capLeft.WithLabelValues(limit, scope).Set(float64(microUSD) / 1e6)
}

// TokenExchange implements runnerapi.Observer.
func (m *Metrics) TokenExchange(outcome, reason string) {
	m.exchanges.WithLabelValues(outcome, reason).Inc()
}

// itemsCollector reports the index's work items by state when scraped, so the gauge
// can never drift from the index the way one kept up by every transition could.
type itemsCollector struct {
	desc  *prometheus.Desc
	count func() map[string]int
}

func (c *itemsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *itemsCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}
