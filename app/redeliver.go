package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
)

// GitHub never redelivers a failed webhook delivery on its own. The redeliverer does
// what GitHub's guide "Automatically redelivering failed deliveries for a GitHub App
// webhook" recommends: list the App's recent deliveries, group them by GUID (every
// attempt of one event shares it), and ask again for each GUID none of whose attempts
// got a 2xx, up to maxRedeliveries times in all (a redelivery can meet GitHub's faults as
// the delivery did; a delivery serve keeps failing is not asked for at every sweep).
//
// The count holds across sweeps, restarts and replicas without shared storage, because
// GitHub remembers for us: a redelivery is listed with redelivery: true, so the GUID's
// redeliveries among its attempts are the times it was asked for, by this process or
// another. Between asking and GitHub listing the new attempt, the process remembers what
// it asked for itself (the GUID with the count it asked at). Two replicas sweeping
// at the same moment may both ask for one GUID; that is harmless, as a redelivered
// webhook is handled idempotently like any duplicate (the ledger dispatches once).

// redeliverer sweeps the App's recent deliveries.
type redeliverer struct {
	cc     githubapp.ClientCreator
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	asked map[string]time.Time // GUID → when this process asked for it
}

// RedeliverStats counts what one sweep saw and did.
type RedeliverStats struct {
	// Deliveries were listed within the window; Failed GUIDs had no 2xx attempt.
	Deliveries, Failed int
	// Redelivered were asked for again in this sweep.
	Redelivered int
}

func newRedeliverer(cc githubapp.ClientCreator, window time.Duration, now func() time.Time) *redeliverer {
	if now == nil {
		now = time.Now
	}
	return &redeliverer{cc: cc, window: window, now: now, asked: map[string]time.Time{}}
}

// guidState is what the sweep learns of one GUID's attempts.
type guidState struct {
	latest       int64 // the newest attempt's delivery ID, the one to redeliver
	event        string
	ok           bool // an attempt got a 2xx
	redeliveries int  // attempts that were redeliveries: times someone asked already
}

// maxRedeliveries is how many times a failed delivery is asked for again in all.
const maxRedeliveries = 3

// sweep lists the deliveries of the last window, newest first, page by page until one
// is older than the window, and asks GitHub to redeliver each failed GUID, up to
// maxRedeliveries times.
func (r *redeliverer) sweep(ctx context.Context) (RedeliverStats, error) {
	var st RedeliverStats
	gh, err := r.cc.NewAppClient()
	if err != nil {
		return st, fmt.Errorf("failed to create the App client: %w", err)
	}
	since := r.now().Add(-r.window)
	guids := map[string]*guidState{}
	var order []string
	opts := &gogithub.ListCursorOptions{PerPage: 100} // GitHub's maximum
list:
	for {
		page, resp, err := gh.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			return st, fmt.Errorf("failed to list the App's webhook deliveries: %w", err)
		}
		for _, d := range page {
			if d.GetDeliveredAt().Time.Before(since) {
				break list
			}
			st.Deliveries++
			g := guids[d.GetGUID()]
			if g == nil {
				// Newest first: the first attempt seen of a GUID is its latest.
				g = &guidState{latest: d.GetID(), event: d.GetEvent()}
				guids[d.GetGUID()] = g
				order = append(order, d.GetGUID())
			}
			if c := d.GetStatusCode(); c >= 200 && c < 300 {
				g.ok = true
			}
			if d.GetRedelivery() {
				g.redeliveries++
			}
		}
		if resp.Cursor == "" {
			break
		}
		opts.Cursor = resp.Cursor
	}
	r.forget(since)
	log := zerolog.Ctx(ctx)
	var errs []error
	for _, guid := range order {
		g := guids[guid]
		if g.ok {
			continue
		}
		st.Failed++
		ask := fmt.Sprintf("%s#%d", guid, g.redeliveries)
		if g.redeliveries >= maxRedeliveries || !r.claim(ask) {
			continue
		}
		var accepted *gogithub.AcceptedError
		if _, _, err := gh.Apps.RedeliverHookDelivery(ctx, g.latest); err != nil && !errors.As(err, &accepted) {
			r.release(ask)
			errs = append(errs, fmt.Errorf("failed to ask for delivery %d (%s) again: %w", g.latest, guid, err))
			continue
		}
		st.Redelivered++
		log.Info().Str(githubapp.LogKeyDeliveryID, guid).Str(githubapp.LogKeyEventType, g.event).
			Int64(logkey.HookDelivery, g.latest).Msg("asked GitHub to redeliver a failed webhook delivery")
	}
	return st, errors.Join(errs...)
}

// claim notes that this process asks for guid; false if it already did.
func (r *redeliverer) claim(guid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.asked[guid]; ok {
		return false
	}
	r.asked[guid] = r.now()
	return true
}

// release forgets a claim whose request failed, so the next sweep tries again.
func (r *redeliverer) release(guid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.asked, guid)
}

// forget drops claims older than the window: those GUIDs are no longer listed.
func (r *redeliverer) forget(since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for guid, at := range r.asked {
		if at.Before(since) {
			delete(r.asked, guid)
		}
	}
}

// run sweeps now and then every interval until ctx ends. A failed sweep is logged; the
// next one tries again.
func (r *redeliverer) run(ctx context.Context, interval time.Duration) {
	log := zerolog.Ctx(ctx)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := r.sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error().Err(err).Int(logkey.Redelivered, st.Redelivered).Msg("failed to redeliver the failed webhook deliveries")
		case st.Failed > 0:
			log.Info().Int(logkey.Deliveries, st.Deliveries).Int(logkey.FailedDeliveries, st.Failed).
				Int(logkey.Redelivered, st.Redelivered).Msg("swept the App's recent webhook deliveries")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
