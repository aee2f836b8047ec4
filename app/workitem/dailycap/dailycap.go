// Package dailycap keeps serve's caps above the run (serve's config bumper.limits):
// model spending per repository and per installation per UTC day, and how many work
// items may start in a repository per day. Every replica counts in the same place: one
// signed counter per scope and day in a shared store, changed by compare-and-swap, so
// that two replicas never both take what is left and nobody but serve can lower what a
// day has spent.
package dailycap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
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

// On reports whether any cap is on: only then is anything counted, and only then is a
// Store needed.
func (l Limits) On() bool {
	return l.RepoDailyMicroUSD > 0 || l.InstallationDailyMicroUSD > 0 || l.RepoDailyItems > 0
}

// Counter is one scope's record of one UTC day: what its runs spent (as they
// reported), what the runs under way hold (each run's grant until it reports), and
// which work items started.
type Counter struct {
	Day           string           `json:"day"`
	SpentMicroUSD int64            `json:"spent_micro_usd"`
	Reserved      map[string]int64 `json:"reserved,omitempty"`
	Items         []string         `json:"items,omitempty"`
	// Sig is serve's signature of the rest (Signer.SignCounter).
	Sig string `json:"sig,omitempty"`
}

// payload is the counter's JSON without its signature: what the signature covers.
func (c Counter) payload() []byte {
	c.Sig = ""
	b, _ := json.Marshal(c)
	return b
}

// used is what the day counts against a cap: spent and held.
func (c *Counter) used() int64 {
	n := c.SpentMicroUSD
	for _, r := range c.Reserved {
		n += r
	}
	return n
}

// Store keeps the day counters where every replica reads and writes them (GitHub:
// ghclient.SpendStore). Save writes c only if the record is still at version (""
// when there was none) and reports false, without error, when another writer got
// there first: a compare-and-swap, so two replicas never both take what is left.
type Store interface {
	Load(ctx context.Context, scope, day string) (c Counter, version string, err error)
	Save(ctx context.Context, scope, day string, c Counter, version string) (bool, error)
}

// Signer signs the counters serve writes and checks those it reads (ledger.Sealer):
// the store is one that whoever may push to the repository can write too.
type Signer interface {
	SignCounter(payload []byte) string
	VerifyCounter(payload []byte, sig string) bool
}

// ScopeInstallation names an installation's counter: its account, "owner".
func ScopeInstallation(repo string) string { owner, _, _ := strings.Cut(repo, "/"); return owner }

// Spent is a cap found spent: which, how much, when it resets. Its message is the whole
// reason, for the work item's status and the runner.
type Spent struct {
	why         string // when set, the whole reason (a counter serve cannot trust)
	name        string // the config key
	spent, cap  int64
	items       bool // a count of items, not dollars
	resets      time.Time
	resetsAfter time.Duration
}

func (c *Spent) Error() string {
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

// dollars writes millionths of a dollar to the cent, as the work item's budget does.
func dollars(micro int64) string { return fmt.Sprintf("$%.2f", float64(micro)/1e6) }

// Book counts against the caps. Its zero fields but CapLeft are required once Limits
// are on; a Book holds no state of its own, the Store does.
type Book struct {
	Limits Limits
	Store  Store
	Signer Signer
	// Now is the clock the days are read from.
	Now func() time.Time
	// CapLeft learns what a money cap (limit, the config key) leaves of scope's day
	// after a hold or a settling, in micro-USD (serve's metrics); nil: nobody.
	CapLeft func(limit, scope string, microUSD int64)
}

func (b Book) capLeft(limit, scope string, microUSD int64) {
	if b.CapLeft != nil {
		b.CapLeft(limit, scope, microUSD)
	}
}

// load reads scope's counter of day and refuses, with a *Spent, one serve did not
// write: whoever may push to the repository could otherwise lower the day's spending
// by writing the ref. An absent counter is an empty day.
func (b Book) load(ctx context.Context, scope, day string) (Counter, string, error) {
	c, version, err := b.Store.Load(ctx, scope, day)
	if err != nil {
		return c, "", fmt.Errorf("failed to read the day counter of %s for %s: %w", scope, day, err)
	}
	if version != "" && !b.Signer.VerifyCounter(c.payload(), c.Sig) {
		return c, "", &Spent{why: fmt.Sprintf("the day counter of %s for %s (refs/bumper/spend/%s) was not written by serve: its signature does not match, "+
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

// update applies fn to scope's counter of day until its write wins.
func (b Book) update(ctx context.Context, scope, day string, fn func(c *Counter) error) error {
	for range maxCounterRetries {
		c, version, err := b.load(ctx, scope, day)
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
		c.Sig = b.Signer.SignCounter(c.payload())
		ok, err := b.Store.Save(ctx, scope, day, c, version)
		if err != nil {
			return fmt.Errorf("failed to write the day counter of %s for %s: %w", scope, day, err)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("failed to update the day counter of %s for %s: %w", scope, day, errCounterBusy)
}

// today is the UTC day now falls in, and when it ends.
func (b Book) today() (string, time.Time, time.Duration) {
	now := b.Now().UTC()
	end := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return now.Format(time.DateOnly), end, end.Sub(now)
}

// Reserve holds want (0: no cap of the run's own) of the repository's and the
// installation's day budgets for the run key names and returns what it got, the least
// of want and what each cap leaves, and the day it is held in ("" when no money cap is
// on: nothing is held). A cap already spent returns a *Spent and holds nothing.
func (b Book) Reserve(ctx context.Context, repo, key string, want int64) (grant int64, day string, err error) {
	caps := b.Limits.moneyCaps(repo)
	if len(caps) == 0 {
		return want, "", nil
	}
	day, end, left := b.today()
	grant = want
	var held []string
	var holds []int64 // what each held scope holds
	for _, sc := range caps {
		err := b.update(ctx, sc.scope, day, func(c *Counter) error {
			delete(c.Reserved, key) // a retried exchange holds once
			room := sc.cap - c.used()
			if room <= 0 {
				return &Spent{name: sc.name, spent: c.used(), cap: sc.cap, resets: end, resetsAfter: left}
			}
			if grant == 0 || room < grant {
				grant = room
			}
			c.Reserved[key] = grant
			b.capLeft(sc.name, sc.scope, sc.cap-c.used())
			return nil
		})
		if err != nil {
			b.release(ctx, held, day, key)
			return 0, "", err
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
		if err := b.update(ctx, scope, day, func(c *Counter) error { c.Reserved[key] = grant; return nil }); err != nil {
			return 0, "", err
		}
	}
	return grant, day, nil
}

// MayDispatch refuses, with a *Spent, a dispatch of work item id in repo that today's
// caps would refuse: a money cap already spent, or, for the item's first run (starts),
// a full limits.repo_daily_items, which it otherwise counts the item against.
func (b Book) MayDispatch(ctx context.Context, repo, id string, starts bool) error {
	if !b.Limits.On() {
		return nil
	}
	if err := b.spent(ctx, repo); err != nil || !starts {
		return err
	}
	return b.startItem(ctx, repo, id)
}

// spent reports, without holding anything, a money cap of repo's already spent today:
// a dispatch then waits for the reset rather than start a runner job whose exchange
// would be refused.
func (b Book) spent(ctx context.Context, repo string) error {
	day, end, left := b.today()
	for _, sc := range b.Limits.moneyCaps(repo) {
		c, _, err := b.load(ctx, sc.scope, day)
		if err != nil {
			return err
		}
		if c.used() >= sc.cap {
			return &Spent{name: sc.name, spent: c.used(), cap: sc.cap, resets: end, resetsAfter: left}
		}
	}
	return nil
}

// release drops key's holds in scopes, best effort: a hold left behind counts against
// the day, never for it.
func (b Book) release(ctx context.Context, scopes []string, day, key string) {
	for _, scope := range scopes {
		_ = b.update(ctx, scope, day, func(c *Counter) error { delete(c.Reserved, key); return nil })
	}
}

// Settle replaces the hold of the run key names, in the day it was granted (day; ""
// when nothing was held), with what it reported it spent (cost); once settled, a later
// report adds what it reports more (more).
func (b Book) Settle(ctx context.Context, repo, key, day string, cost, more int64) error {
	if day == "" {
		return nil
	}
	today, _, _ := b.today()
	for _, sc := range b.Limits.moneyCaps(repo) {
		err := b.update(ctx, sc.scope, day, func(c *Counter) error {
			if _, held := c.Reserved[key]; held {
				delete(c.Reserved, key)
				c.SpentMicroUSD += cost
			} else if more > 0 {
				c.SpentMicroUSD += more // settled already: a repeated report says more
			} else {
				return errUnchanged // settled already (a repeated report)
			}
			if day == today {
				b.capLeft(sc.name, sc.scope, sc.cap-c.used())
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startItem counts work item id as started today in repo, once: refused with a *Spent
// when limits.repo_daily_items are already started.
func (b Book) startItem(ctx context.Context, repo, id string) error {
	l := b.Limits
	if l.RepoDailyItems == 0 {
		return nil
	}
	day, end, left := b.today()
	return b.update(ctx, repo, day, func(c *Counter) error {
		if slices.Contains(c.Items, id) {
			return nil
		}
		if len(c.Items) >= l.RepoDailyItems {
			return &Spent{name: "limits.repo_daily_items", spent: int64(len(c.Items)), cap: int64(l.RepoDailyItems), items: true, resets: end, resetsAfter: left}
		}
		c.Items = append(c.Items, id)
		return nil
	})
}
