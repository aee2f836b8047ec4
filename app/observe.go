package app

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/metrics"
)

// readiness is whether serve may take traffic: only once the start-up rebuild filled
// the ledger index from GitHub. Before, a webhook would be handled against an empty
// index and a runner's exchange refused for a work item serve has not read yet.
type readiness struct {
	mu    sync.Mutex
	ready bool
	// why is what /readyz answers while not ready.
	why string
}

func newReadiness() *readiness {
	return &readiness{why: "the start-up rebuild of the ledger from GitHub has not finished"}
}

// rebuilt records a rebuild's result: a success makes serve ready for good (a later
// failed rebuild leaves the index it had); a failure before any success says why.
func (r *readiness) rebuilt(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.ready, r.why = true, ""
		return
	}
	if !r.ready {
		r.why = "the start-up rebuild of the ledger from GitHub failed; see serve's log"
	}
}

// retrying says why serve is not ready yet while the start-up rebuild is tried again.
func (r *readiness) retrying(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready {
		r.why = why
	}
}

// stopping makes serve not ready again: it is shutting down, and a load balancer
// should send the next delivery to another replica.
func (r *readiness) stopping() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready, r.why = false, "shutting down"
}

// serveReadyz answers 200 once ready, else 503 with the reason.
func (r *readiness) serveReadyz(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	ready, why := r.ready, r.why
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", why)
		return
	}
	fmt.Fprintln(w, "ready")
}

// webhookOutcomes are the dispatcher's callbacks that count the deliveries that never
// reach a handler (rejected, ignored, dropped), then answer as go-githubapp's defaults
// do. The handled and failed ones are counted where they are handled (the scheduler).
func webhookOutcomes(m *metrics.Metrics, known map[string]bool) []githubapp.DispatcherOption {
	onError := func(w http.ResponseWriter, r *http.Request, err error) {
		var ve githubapp.ValidationError
		var he *handlerError
		if errors.As(err, &he) {
			// Handled and counted by the scheduler: only the 500 is left to write.
		} else if errors.As(err, &ve) {
			// Unsigned: the event header is anyone's words, so only known names
			// become a label value.
			m.Delivery(knownEvent(ve.EventType, known), metrics.DeliveryRejected)
		} else {
			m.Delivery(knownEvent(r.Header.Get("X-GitHub-Event"), known), metrics.DeliveryDropped)
		}
		githubapp.DefaultErrorCallback(w, r, err)
	}
	onResponse := func(w http.ResponseWriter, r *http.Request, event string, handled bool) {
		if !handled {
			// Signed by GitHub: its event names are a bounded set.
			m.Delivery(event, metrics.DeliveryIgnored)
		}
		githubapp.DefaultResponseCallback(w, r, event, handled)
	}
	return []githubapp.DispatcherOption{githubapp.WithErrorCallback(onError), githubapp.WithResponseCallback(onResponse)}
}

// knownEvents are the events the handlers take, plus GitHub's ping.
func knownEvents(handlers []githubapp.EventHandler) map[string]bool {
	known := map[string]bool{"ping": true}
	for _, h := range handlers {
		for _, e := range h.Handles() {
			known[e] = true
		}
	}
	return known
}

func knownEvent(event string, known map[string]bool) string {
	if known[event] {
		return event
	}
	return "other"
}

// handledBy reports each handled delivery to the metrics and to Options.OnHandled.
func handledBy(m *metrics.Metrics, onHandled func(string, time.Duration)) func(string, time.Duration, error) {
	return func(event string, elapsed time.Duration, err error) {
		m.Handled(event, elapsed, err)
		if onHandled != nil {
			onHandled(event, elapsed)
		}
	}
}
