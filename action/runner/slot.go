package runner

import (
	"context"
	"errors"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/slots"
)

// slotNoteEvery is how often, at most, the job log says again what a waiting run waits
// for (when that changed); slotNoteAnyway how often it says it when nothing changed.
const (
	slotNoteEvery  = 30 * time.Second
	slotNoteAnyway = 5 * time.Minute
)

// waitForSlot claims the runner host's slot for the run's VMs (the environment's setup,
// then the run's own: one at a time), waiting its turn while the host runs as many VMs,
// or as much of their memory, as it allows. While it waits the job log says so, at
// most every slotNoteEvery, and serve shows it in the status comment; a /stop or the run's
// end of time ends the wait. Nil when the host sets no limit (Config.Slots).
func (r *run) waitForSlot(ctx context.Context) (*slots.Slot, error) {
	if r.cfg.Slots == nil {
		return nil, nil
	}
	need := r.cfg.VM.MemoryMB
	if need == 0 {
		need = sandbox.DefaultMemoryMB
	}
	var told bool
	var noted time.Time
	var line string
	slot, err := r.cfg.Slots.Acquire(ctx, need, func(w slots.Wait) {
		if !told {
			told = true
			r.link.waiting(ctx, true)
		}
		now, next := r.cfg.Now(), w.String()
		if noted.IsZero() || now.Sub(noted) >= slotNoteEvery && next != line || now.Sub(noted) >= slotNoteAnyway {
			r.rec.job.note("%s", next)
			noted, line = now, next
		}
	})
	switch {
	case errors.Is(err, slots.ErrTooLarge):
		return nil, failWith(evidence.OutcomeError, "%v", err)
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return nil, failWith(evidence.OutcomeTimedOut, "the run waited for a VM slot on its runner host until its installation token had no time left for a VM (the host runs as many VMs as %s and %s allow): %v",
			slots.EnvMaxVMs, slots.EnvMemoryMB, err)
	}
	if err != nil {
		return nil, err
	}
	if told {
		r.rec.job.note("VM slot acquired after %ds", int(slot.Waited.Round(time.Second).Seconds()))
		r.link.waiting(ctx, false)
	}
	return slot, nil
}
