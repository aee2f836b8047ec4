package runner

import (
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/textcut"
)

// noteRoundsOver is why a steer that came after the agent's last round did not reach
// it: serve keeps it for the next round.
const noteRoundsOver = "the run's agent rounds were over before it could be given"

// steerHub takes the writers' /steer words serve gives the run (the task's, and those
// of its should-stop answers) and gives each, once, to the agent's rounds: a steer that
// comes while a round runs goes to that round's harness, one that comes between
// rounds, or that a round's harness could not give the agent (codex mid-run, the
// agent's turn over), waits for the next round. It records what became of each, for
// the evidence and for serve. Its methods may be called from any goroutine.
type steerHub struct {
	now func() time.Time

	mu sync.Mutex
	// recs are the steers the run took, in the order it had them; steers the same,
	// as serve gave them, by ID.
	recs   []*evidence.Steer
	byID   map[int64]*evidence.Steer
	steers map[int64]wire.Steer
	// waiting are the steers for the next round, oldest first.
	waiting []wire.Steer
	// round is the running round's channel and how its harness gives a steer; nil
	// between rounds.
	round *steerRound
	// over: the run's agent rounds are over.
	over bool
}

type steerRound struct {
	ch  chan wire.Steer
	via string
}

func newSteerHub(now func() time.Time) *steerHub {
	return &steerHub{now: now, byID: map[int64]*evidence.Steer{}, steers: map[int64]wire.Steer{}}
}

// steerVia is how a harness gives the agent a steer while a round runs.
func steerVia(harness string) string {
	switch harness {
	case repoconfig.HarnessClaudeCode:
		return evidence.SteerViaMessage
	case repoconfig.HarnessCommand:
		return evidence.SteerViaFile
	default:
		// codex: in the next round's prompt, the only way it takes words.
		return evidence.SteerViaPrompt
	}
}

// take records a steer the run has not had before and returns its record; nil for one
// it had (serve lists each until the run reports it), one without an ID, or one past
// evidence.MaxSteers (serve keeps it: the run never reports it).
func (h *steerHub) take(s wire.Steer) *evidence.Steer {
	if s.ID <= 0 || h.byID[s.ID] != nil || len(h.recs) >= evidence.MaxSteers {
		return nil
	}
	rec := &evidence.Steer{ID: s.ID, Author: textcut.Bytes(strings.ToValidUTF8(s.Author, "\uFFFD"), 100), CreatedAt: s.CreatedAt.UTC(),
		ArrivedAt: h.now().UTC(), Text: textcut.Bytes(strings.ToValidUTF8(s.Text, "\uFFFD"), wire.MaxSteerText)}
	h.recs = append(h.recs, rec)
	h.byID[s.ID] = rec
	h.steers[s.ID] = s
	return rec
}

// fromTask takes the steers serve kept for the run in its task: the agent reads them
// with the task, from its first round on, which is starting now.
func (h *steerHub) fromTask(steers []wire.Steer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range steers {
		if rec := h.take(s); rec != nil {
			rec.Via, rec.DeliveredAt = evidence.SteerViaTask, rec.ArrivedAt
		}
	}
}

// offer takes the steers of a should-stop answer: each new one goes to the running
// round, or waits for the next. Once the agent's rounds are over it takes none (the
// run never reports them, so serve keeps them for the next round).
func (h *steerHub) offer(steers []wire.Steer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.over {
		return
	}
	for _, s := range steers {
		rec := h.take(s)
		switch {
		case rec == nil:
		case h.round != nil:
			select {
			case h.round.ch <- s:
			default:
				h.waiting = append(h.waiting, s)
			}
		default:
			h.waiting = append(h.waiting, s)
		}
	}
}

// startRound hands the waiting steers to a round of harness: the channel for its
// Request.Steers, holding them, into which the steers that come while it runs go.
func (h *steerHub) startRound(harness string) <-chan wire.Steer {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &steerRound{ch: make(chan wire.Steer, evidence.MaxSteers), via: steerVia(harness)}
	for _, s := range h.waiting {
		r.ch <- s // at most MaxSteers steers are ever taken
	}
	h.waiting = nil
	h.round = r
	return r.ch
}

// report is the running round's Request.OnSteer: a steer delivered is done; one that
// was not waits for the next round, its note saying why so far.
func (h *steerHub) report(d wire.SteerDelivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.byID[d.ID]
	if rec == nil || !rec.DeliveredAt.IsZero() || h.round == nil {
		return
	}
	if !d.DeliveredAt.IsZero() {
		rec.Via, rec.DeliveredAt, rec.Note = h.round.via, d.DeliveredAt.UTC(), ""
		return
	}
	rec.Note = textcut.Bytes(strings.ToValidUTF8(d.Note, "\uFFFD"), 500)
	h.waiting = append(h.waiting, h.steers[d.ID])
}

// endRound ends the running round once its harness returned: the steers it never took
// wait for the next round, before those it gave back.
func (h *steerHub) endRound() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.round == nil {
		return
	}
	var untaken []wire.Steer
	for len(h.round.ch) > 0 {
		untaken = append(untaken, <-h.round.ch)
	}
	h.waiting = append(untaken, h.waiting...)
	h.round = nil
}

// close ends the agent's rounds: the steers still waiting were not delivered (serve
// keeps them for the next round). It returns the evidence's steers.
func (h *steerHub) close() []evidence.Steer {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.over = true
	h.waiting = nil
	out := make([]evidence.Steer, 0, len(h.recs))
	for _, rec := range h.recs {
		if rec.DeliveredAt.IsZero() && rec.Note == "" {
			rec.Note = noteRoundsOver
		}
		out = append(out, *rec)
	}
	return out
}

// deliveries is what serve hears of each steer the run took.
func (h *steerHub) deliveries() []wire.SteerDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []wire.SteerDelivery
	for _, rec := range h.recs {
		out = append(out, wire.SteerDelivery{ID: rec.ID, DeliveredAt: rec.DeliveredAt, Note: rec.Note})
	}
	return out
}
