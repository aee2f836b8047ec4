package agentwords

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// steerText is a /steer comment as it was given (ok), or as found since: deleted,
// edited or no longer a /steer (not ok, never served).
type steerText struct {
	steer wire.Steer
	ok    bool
}

// maxRememberedSteers bounds the memory of steers; past it, it starts over, and a steer
// not remembered is read from GitHub again.
const maxRememberedSteers = 1024

// Steers remembers /steer comments as they were given, by comment id, so that a run
// polling for them costs no call to GitHub. Its zero value is empty and ready to use.
type Steers struct {
	mu sync.Mutex
	m  map[int64]steerText
}

// Remember keeps a steer's text: as it was given (ok), or as one never to be served.
func (s *Steers) Remember(st wire.Steer, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxRememberedSteers {
		s.m = map[int64]steerText{}
	}
	s.m[st.ID] = steerText{steer: st, ok: ok}
}

// Of is a kept steer's text: from memory of the comment as it was given, else (after a
// restart, or on another replica) from GitHub, where a comment deleted, edited since it
// was given or no longer a /steer is never served (ok false).
func (s *Steers) Of(ctx context.Context, src Source, ref ledger.SteerRef) (st wire.Steer, ok bool, err error) {
	s.mu.Lock()
	t, ok := s.m[ref.ID]
	s.mu.Unlock()
	if ok {
		return t.steer, t.ok, nil
	}
	c, found, err := src.Comment(ctx, ref.ID)
	if err != nil {
		return wire.Steer{}, false, fmt.Errorf("failed to read steer %d: %w", ref.ID, err)
	}
	if !found {
		s.Remember(wire.Steer{ID: ref.ID}, false)
		return wire.Steer{}, false, nil
	}
	cmd, isCmd := command.Parse(c.Body)
	st = wire.Steer{ID: ref.ID, Author: ref.By, CreatedAt: ref.At, Text: cmd.Text}
	good := isCmd && cmd.Kind == command.Steer && cmd.Text != "" && len(cmd.Text) <= wire.MaxSteerText &&
		strings.EqualFold(c.Author, ref.By) && !c.UpdatedAt.After(c.CreatedAt)
	s.Remember(st, good)
	return st, good, nil
}

// For are rec's kept steers for a run of attempt, oldest first: those given while it
// worked (working: through should-stop), or the others, given before (with its task).
func (s *Steers) For(ctx context.Context, src Source, rec *ledger.Record, attempt int, working bool) ([]wire.Steer, error) {
	var out []wire.Steer
	for _, ref := range rec.Steers {
		if (ref.For == attempt) != working {
			continue
		}
		st, ok, err := s.Of(ctx, src, ref)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// Delivered takes a run's report of its steers: those delivered are done, and so are
// those that can no longer be served (deleted or edited since); the others wait in rec
// for the next run.
func (s *Steers) Delivered(ctx context.Context, src Source, rec *ledger.Record, reports []wire.SteerDelivery) error {
	if len(reports) == 0 {
		return nil
	}
	done := map[int64]bool{}
	for _, d := range reports {
		if !d.DeliveredAt.IsZero() {
			done[d.ID] = true
		}
	}
	kept := rec.Steers[:0]
	for _, ref := range rec.Steers {
		if done[ref.ID] {
			continue
		}
		if _, ok, err := s.Of(ctx, src, ref); err != nil {
			return err
		} else if !ok {
			continue
		}
		kept = append(kept, ref)
	}
	rec.Steers = slices.Clip(kept)
	return nil
}
