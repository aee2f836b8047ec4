package workitem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
)

// Limits are serve's caps above the run (serve's config bumper.limits): model spending
// per repository and per installation per UTC day, and how many work items may start in
// a repository per day. Zero turns a cap off; with all three off nothing is counted.
type Limits struct {
	RepoDailyMicroUSD         int64
	InstallationDailyMicroUSD int64
	RepoDailyItems            int
}

// moneyCap is one of the daily money caps with what it covers.
type moneyCap struct {
	scope, name string // the counter's scope, the config key
	cap         int64
}

// moneyCaps are the money caps that are on for repo: its own, its installation's.
func (l Limits) moneyCaps(repo string) []moneyCap {
	var out []moneyCap
	for _, c := range []moneyCap{{repo, "limits.repo_daily_usd", l.RepoDailyMicroUSD},
		{ScopeInstallation(repo), "limits.installation_daily_usd", l.InstallationDailyMicroUSD}} {
		if c.cap > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (l Limits) on() bool {
	return l.RepoDailyMicroUSD > 0 || l.InstallationDailyMicroUSD > 0 || l.RepoDailyItems > 0
}

// DayCounter is one scope's record of one UTC day: what its runs spent (as they
// reported), what the runs under way hold (each run's grant until it reports), and
// which work items started.
type DayCounter struct {
	Day           string           `json:"day"`
	SpentMicroUSD int64            `json:"spent_micro_usd"`
	Reserved      map[string]int64 `json:"reserved,omitempty"`
	Items         []string         `json:"items,omitempty"`
	// Sig is serve's signature of the rest (ledger.Sealer.SignCounter).
	Sig string `json:"sig,omitempty"`
}

// payload is the counter's JSON without its signature: what the signature covers.
func (c DayCounter) payload() []byte {
	c.Sig = ""
	b, _ := json.Marshal(c)
	return b
}

// used is what the day counts against a cap: spent and held.
func (c *DayCounter) used() int64 {
	n := c.SpentMicroUSD
	for _, r := range c.Reserved {
		n += r
	}
	return n
}

// SpendStore keeps the day counters where every replica reads and writes them (GitHub:
// ghclient.SpendStore). Save writes c only if the record is still at version (""
// when there was none) and reports false, without error, when another writer got
// there first: a compare-and-swap, so two replicas never both take what is left.
type SpendStore interface {
	Load(ctx context.Context, scope, day string) (c DayCounter, version string, err error)
	Save(ctx context.Context, scope, day string, c DayCounter, version string) (bool, error)
}

// ScopeInstallation names an installation's counter: its account, "owner".
func ScopeInstallation(repo string) string { owner, _, _ := strings.Cut(repo, "/"); return owner }

// loadCounter reads scope's counter of day and refuses, with a *capSpent, one serve
// did not write: whoever may push to the repository could otherwise lower the day's
// spending by writing the ref. An absent counter is an empty day.
func (s *Service) loadCounter(ctx context.Context, scope, day string) (DayCounter, string, error) {
	c, version, err := s.opts.Spend.Load(ctx, scope, day)
	if err != nil {
		return c, "", fmt.Errorf("failed to read the day counter of %s for %s: %w", scope, day, err)
	}
	if version != "" && !s.opts.Sealer.VerifyCounter(c.payload(), c.Sig) {
		return c, "", &capSpent{why: fmt.Sprintf("the day counter of %s for %s (refs/bumper/spend/%s) was not written by serve: its signature does not match, "+
			"so nothing is granted from it; an admin who means to forget the day's spending deletes that ref", scope, day, day)}
	}
	return c, version, nil
}

// maxCounterRetries bounds how often one update loses a race before it gives up.
const maxCounterRetries = 20

// errCounterBusy is what an update that lost every race returns.
var errCounterBusy = errors.New("the day counter kept changing under this update")

// errUnchanged is what an update's fn returns when it changes nothing: nothing is
// written (a repeated report is not a commit on the counter each time).
var errUnchanged = errors.New("the day counter is unchanged")

// updateCounter applies fn to scope's counter of day until its write wins.
func (s *Service) updateCounter(ctx context.Context, scope, day string, fn func(c *DayCounter) error) error {
	for range maxCounterRetries {
		c, version, err := s.loadCounter(ctx, scope, day)
		if err != nil {
			return err
		}
		c.Day = day
		if c.Reserved == nil {
			c.Reserved = map[string]int64{}
		}
		if err := fn(&c); errors.Is(err, errUnchanged) {
			return nil
		} else if err != nil {
			return err
		}
		c.Sig = s.opts.Sealer.SignCounter(c.payload())
		ok, err := s.opts.Spend.Save(ctx, scope, day, c, version)
		if err != nil {
			return fmt.Errorf("failed to write the day counter of %s for %s: %w", scope, day, err)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("failed to update the day counter of %s for %s: %w", scope, day, errCounterBusy)
}

// capSpent is a cap found spent: which, how much, when it resets.
type capSpent struct {
	why         string // when set, the whole reason (a counter serve cannot trust)
	name        string // the config key
	spent, cap  int64
	items       bool // a count of items, not dollars
	resets      time.Time
	resetsAfter time.Duration
}

func (c *capSpent) Error() string {
	if c.why != "" {
		return c.why
	}
	amount := fmt.Sprintf("%s of %s", dollars(c.spent), dollars(c.cap))
	if c.items {
		amount = fmt.Sprintf("%d of %d work items started", c.spent, c.cap)
	}
	return fmt.Sprintf("serve's %s is spent for today: %s; it resets at %s (in %s); comment /retry then",
		c.name, amount, c.resets.Format("2006-01-02 15:04 MST"), c.resetsAfter.Round(time.Minute))
}

// today is the UTC day now falls in, and when it ends.
func (s *Service) today() (string, time.Time, time.Duration) {
	now := s.now().UTC()
	end := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return now.Format(time.DateOnly), end, end.Sub(now)
}

// runKey names a run in the day counters.
func runKey(rec *ledger.Record, att *ledger.Attempt) string {
	return fmt.Sprintf("%s#%d/%d", rec.Repository, rec.Issue, att.Number)
}

// reserveDaily holds want (0: no cap of the run's own) of the repository's and the
// installation's day budgets for att and returns what it got: the least of want and
// what each cap leaves. A cap already spent returns a *capSpent and holds nothing.
func (s *Service) reserveDaily(ctx context.Context, rec *ledger.Record, att *ledger.Attempt, want int64) (int64, error) {
	caps := s.opts.Limits.moneyCaps(rec.Repository)
	if len(caps) == 0 {
		return want, nil
	}
	day, end, left := s.today()
	key := runKey(rec, att)
	grant := want
	var held []string
	var holds []int64 // what each held scope holds
	for _, sc := range caps {
		err := s.updateCounter(ctx, sc.scope, day, func(c *DayCounter) error {
			delete(c.Reserved, key) // a retried exchange holds once
			room := sc.cap - c.used()
			if room <= 0 {
				return &capSpent{name: sc.name, spent: c.used(), cap: sc.cap, resets: end, resetsAfter: left}
			}
			if grant == 0 || room < grant {
				grant = room
			}
			c.Reserved[key] = grant
			s.observer().CapLeft(sc.name, sc.scope, sc.cap-c.used())
			return nil
		})
		if err != nil {
			s.releaseDaily(ctx, held, day, key)
			return 0, err
		}
		held = append(held, sc.scope)
		holds = append(holds, grant)
	}
	// The installation's cap may have lowered the grant after the repository's was
	// held: hold the same everywhere.
	for i, scope := range held {
		if holds[i] == grant {
			continue
		}
		if err := s.updateCounter(ctx, scope, day, func(c *DayCounter) error { c.Reserved[key] = grant; return nil }); err != nil {
			return 0, err
		}
	}
	att.SpendDay = day
	return grant, nil
}

// mayDispatchToday refuses, with a *capSpent, a dispatch today's caps would refuse:
// a money cap already spent, or, for the item's first run (starts), a full
// limits.repo_daily_items, which it otherwise counts the item against.
func (s *Service) mayDispatchToday(ctx context.Context, rec *ledger.Record, starts bool) error {
	if !s.opts.Limits.on() {
		return nil
	}
	if err := s.dailySpent(ctx, rec); err != nil || !starts {
		return err
	}
	return s.startItem(ctx, rec)
}

// dailySpent reports, without holding anything, a money cap of rec's already spent
// today: a dispatch then waits for the reset rather than start a runner job whose
// exchange would be refused.
func (s *Service) dailySpent(ctx context.Context, rec *ledger.Record) error {
	day, end, left := s.today()
	for _, sc := range s.opts.Limits.moneyCaps(rec.Repository) {
		c, _, err := s.loadCounter(ctx, sc.scope, day)
		if err != nil {
			return err
		}
		if c.used() >= sc.cap {
			return &capSpent{name: sc.name, spent: c.used(), cap: sc.cap, resets: end, resetsAfter: left}
		}
	}
	return nil
}

// releaseDaily drops key's holds in scopes, best effort: a hold left behind counts
// against the day, never for it.
func (s *Service) releaseDaily(ctx context.Context, scopes []string, day, key string) {
	for _, scope := range scopes {
		_ = s.updateCounter(ctx, scope, day, func(c *DayCounter) error { delete(c.Reserved, key); return nil })
	}
}

// settleDaily replaces att's hold with what it reported it spent, in the day it was
// granted; once settled, a later report adds what it reports more (more).
func (s *Service) settleDaily(ctx context.Context, rec *ledger.Record, att *ledger.Attempt, more int64) error {
	if att.SpendDay == "" {
		return nil
	}
	key := runKey(rec, att)
	day, _, _ := s.today()
	for _, sc := range s.opts.Limits.moneyCaps(rec.Repository) {
		err := s.updateCounter(ctx, sc.scope, att.SpendDay, func(c *DayCounter) error {
			if _, held := c.Reserved[key]; held {
				delete(c.Reserved, key)
				c.SpentMicroUSD += att.CostMicroUSD
			} else if more > 0 {
				c.SpentMicroUSD += more // settled already: a repeated report says more
			} else {
				return errUnchanged // settled already (a repeated report)
			}
			if att.SpendDay == day {
				s.observer().CapLeft(sc.name, sc.scope, sc.cap-c.used())
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startItem counts rec as started today in its repository, once: refused with a
// *capSpent when limits.repo_daily_items are already started.
func (s *Service) startItem(ctx context.Context, rec *ledger.Record) error {
	l := s.opts.Limits
	if l.RepoDailyItems == 0 {
		return nil
	}
	day, end, left := s.today()
	id := rec.ID()
	return s.updateCounter(ctx, rec.Repository, day, func(c *DayCounter) error {
		if slices.Contains(c.Items, id) {
			return nil
		}
		if len(c.Items) >= l.RepoDailyItems {
			return &capSpent{name: "limits.repo_daily_items", spent: int64(len(c.Items)), cap: int64(l.RepoDailyItems), items: true, resets: end, resetsAfter: left}
		}
		c.Items = append(c.Items, id)
		return nil
	})
}

// failOnCap fails the item whose run a spent cap refused, saying which cap, how much
// was spent and when it resets, and returns the refusal.
func (s *Service) failOnCap(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt, capErr *capSpent) error {
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
