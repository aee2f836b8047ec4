package workitem

import (
	"context"
	"fmt"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem/dailycap"
)

// Limits are serve's caps above the run (serve's config bumper.limits); dailycap
// counts against them.
type Limits = dailycap.Limits

// DayCounter is one scope's record of one UTC day (dailycap.Counter), as SpendStore
// keeps it.
type DayCounter = dailycap.Counter

// SpendStore keeps the day counters where every replica reads and writes them
// (dailycap.Store; GitHub: ghclient.SpendStore).
type SpendStore = dailycap.Store

// daily is the book of serve's daily caps, over the service's store, signer and clock.
func (s *Service) daily() dailycap.Book {
	return dailycap.Book{Limits: s.opts.Limits, Store: s.opts.Spend, Signer: s.opts.Sealer, Now: s.now, CapLeft: s.observer().CapLeft}
}

// runKey names a run in the day counters.
func runKey(rec *ledger.Record, att *ledger.Attempt) string {
	return fmt.Sprintf("%s#%d/%d", rec.Repository, rec.Issue, att.Number)
}

// reserveDaily holds want (0: no cap of the run's own) of the repository's and the
// installation's day budgets for att and returns what it got: the least of want and
// what each cap leaves. A cap already spent returns a *dailycap.Spent and holds nothing.
func (s *Service) reserveDaily(ctx context.Context, rec *ledger.Record, att *ledger.Attempt, want int64) (int64, error) {
	grant, day, err := s.daily().Reserve(ctx, rec.Repository, runKey(rec, att), want)
	if err != nil {
		return 0, err
	}
	if day != "" {
		att.SpendDay = day
	}
	return grant, nil
}

// mayDispatchToday refuses, with a *dailycap.Spent, a dispatch today's caps would
// refuse: a money cap already spent, or, for the item's first run (starts), a full
// limits.repo_daily_items, which it otherwise counts the item against.
func (s *Service) mayDispatchToday(ctx context.Context, rec *ledger.Record, starts bool) error {
	return s.daily().MayDispatch(ctx, rec.Repository, rec.ID(), starts)
}

// settleDaily replaces att's hold with what it reported it spent, in the day it was
// granted; once settled, a later report adds what it reports more (more).
func (s *Service) settleDaily(ctx context.Context, rec *ledger.Record, att *ledger.Attempt, more int64) error {
	return s.daily().Settle(ctx, rec.Repository, runKey(rec, att), att.SpendDay, att.CostMicroUSD, more)
}

// failOnCap fails the item whose run a spent cap refused, saying which cap, how much
// was spent and when it resets, and returns the refusal.
func (s *Service) failOnCap(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt, capErr *dailycap.Spent) error {
	why := capErr.Error()
	if att != nil {
		att.Outcome, att.EndedAt = "cap", s.now().UTC()
	}
	if it.rec.State.Active() {
		if err := s.move(ctx, it, ledger.Failed, why); err != nil {
			return err
		}
	}
	if err := s.save(ctx, gh, it, ""); err != nil {
		return err
	}
	return refuse(RefusalBudget, "%s", why)
}
