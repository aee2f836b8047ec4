package meter

import (
	"fmt"
	"sync"
)

// Meter keeps one run's model cost against its budget. A call that generates tokens
// first reserves its worst case (Reserve), which is held against the budget until the
// call settles to what it cost (Reservation.Settle) or is released (Reservation.Release),
// so that calls in flight at once cannot together spend more than the budget. It is safe
// for concurrent use.
type Meter struct {
	prices *Prices
	budget float64 // USD; 0 means no cap

	mu        sync.Mutex
	spent     float64
	calls     int
	unknown   int // calls priced with the default row
	partial   int // calls whose stream ended before the final usage
	estimated int // calls charged their worst case for want of a usage report
	// reserved is the worst case of the calls in flight (inFlight of them): held against
	// the budget from Reserve until each call settles, so that calls made at once cannot
	// together spend more than the budget.
	reserved float64
	inFlight int
	// refused counts calls refused for want of budget: the run went over its cap.
	refused int
}

// New returns a meter with a budget in US dollars (0: unlimited, still metered).
func New(prices *Prices, budgetUSD float64) (*Meter, error) {
	if prices == nil {
		return nil, fmt.Errorf("failed to create meter: no price table")
	}
	if budgetUSD < 0 {
		return nil, fmt.Errorf("failed to create meter: budget %.2f is negative", budgetUSD)
	}
	return &Meter{prices: prices, budget: budgetUSD}, nil
}

// Check returns nil while the run may make another model call, or an error that says
// the budget is spent. Calls that generate tokens also need a Reserve.
func (m *Meter) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.budget > 0 && m.spent >= m.budget {
		// A call refused because nothing is left is refused for want of budget, as one
		// whose worst case does not fit: the run must say it ran out.
		m.refused++
		return fmt.Errorf("the run's model budget of $%.2f is spent ($%.4f used over %d calls); no further model calls are allowed", m.budget, m.spent, m.calls)
	}
	return nil
}

// Record prices one call's usage, adds it to the run and returns its cost and whether
// the model was in the table.
func (m *Meter) Record(u Usage) (usd float64, known bool) {
	usd, known = m.prices.Cost(u)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(usd, known, u.Complete, false)
	return usd, known
}

// add counts one charged call; m.mu is held.
func (m *Meter) add(usd float64, known, complete, estimated bool) {
	m.spent += usd
	m.calls++
	if !known {
		m.unknown++
	}
	if !complete {
		m.partial++
	}
	if estimated {
		m.estimated++
	}
}

// Charge is what one call was charged.
type Charge struct {
	// Usage is the usage the response reported or, when Estimated, the worst case
	// charged in its place.
	Usage Usage
	USD   float64
	Known bool // the model was in the price table
	// Estimated is true when the response carried no final usage report, so the call
	// was charged the worst case for its request.
	Estimated bool
	// ReservedUSD is what the call held against the budget while in flight.
	ReservedUSD float64
}

// Reservation is one call's hold on the budget, from Reserve until Settle or Release.
type Reservation struct {
	m    *Meter
	req  Request
	usd  float64
	done bool // settled or released; guarded by m.mu
}

// BudgetError is a call refused because its worst case does not fit in what is left of
// the budget once the calls in flight are counted at their worst case.
type BudgetError struct {
	BudgetUSD, SpentUSD, ReservedUSD float64
	InFlight                         int
	Worst                            Usage   // the call's worst case, in tokens
	WorstUSD                         float64 // and in dollars
	CapGiven                         bool    // the request set its output cap
}

// LeftUSD is what is left of the budget for a new call.
func (e *BudgetError) LeftUSD() float64 { return max(e.BudgetUSD-e.SpentUSD-e.ReservedUSD, 0) }

func (e *BudgetError) Error() string {
	capNote := "its output cap"
	if !e.CapGiven {
		capNote = "the model's output limit, since the request set no cap"
	}
	model := e.Worst.Model
	if model == "" {
		model = "not named, priced at the table's default row"
	}
	s := fmt.Sprintf("this call's worst case $%.4f (model %s: %d output tokens, %s; %d input tokens at most) is more than the $%.4f left of the run's model budget of %s ($%.4f spent",
		e.WorstUSD, model, e.Worst.Output, capNote, e.Worst.Input, e.LeftUSD(), dollars(e.BudgetUSD), e.SpentUSD)
	if e.InFlight > 0 {
		calls := "calls"
		if e.InFlight == 1 {
			calls = "call"
		}
		s += fmt.Sprintf(", $%.4f held by %d %s in flight at their worst case", e.ReservedUSD, e.InFlight, calls)
	}
	return s + "); refused before reaching the API, even though it may have cost less: every call holds its worst case until it ends. " +
		"Set a lower output cap (max_tokens, max_output_tokens or max_completion_tokens)" + waitHint(e.InFlight)
}

// dollars prints a budget in cents, or to a hundredth of a cent when it has one.
func dollars(usd float64) string {
	if c := fmt.Sprintf("%.2f", usd); c+"00" == fmt.Sprintf("%.4f", usd) {
		return "$" + c
	}
	return fmt.Sprintf("$%.4f", usd)
}

func waitHint(inFlight int) string {
	if inFlight > 0 {
		return ", or retry once the calls in flight have ended"
	}
	return ""
}

// Reserve holds the worst case of the call req describes (WorstCase, as if it reported
// no usage) against the budget, or refuses the call with a *BudgetError when the spend,
// the calls in flight and this one would together exceed the budget. So calls made at
// once can never spend more than the budget, as long as each costs at most its worst
// case. The price of that is that a call whose worst case is more than what is left is
// refused even when it would have been cheap. With no budget (0) nothing is refused, but
// the hold is still counted. The reservation must end in Settle or Release.
func (m *Meter) Reserve(req Request) (*Reservation, error) {
	worst, usd, _ := m.prices.WorstCase(req, Usage{})
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.budget > 0 && m.spent+m.reserved+usd > m.budget {
		m.refused++
		return nil, &BudgetError{BudgetUSD: m.budget, SpentUSD: m.spent, ReservedUSD: m.reserved, InFlight: m.inFlight,
			Worst: worst, WorstUSD: usd, CapGiven: req.MaxOutput > 0}
	}
	m.reserved += usd
	m.inFlight++
	return &Reservation{m: m, req: req, usd: usd}, nil
}

// unhold ends r's hold; m.mu is held. It reports false if r had already ended.
func (m *Meter) unhold(r *Reservation) bool {
	if r.done {
		return false
	}
	r.done = true
	m.inFlight--
	m.reserved -= r.usd
	if m.inFlight == 0 {
		m.reserved = 0 // no float residue once nothing is in flight
	}
	return true
}

// Release ends the hold of a call that generated nothing (it never reached the API, or
// the API refused it without generating): nothing is charged. Only the first Settle or
// Release of a reservation counts.
func (r *Reservation) Release() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.unhold(r)
}

// Settle replaces the call's hold by its charge. With a final usage report (u.Complete)
// it is charged what the report says; without one (a stream cut off, an error, a body
// without usage) it is charged the worst case for its request given what it showed, so
// that losing the usage never makes a call cheaper. Only the first Settle or Release of
// a reservation counts; a later one returns the zero Charge.
func (r *Reservation) Settle(u Usage) Charge {
	var ch Charge
	if u.Complete {
		usd, known := r.m.prices.Cost(u)
		ch = Charge{Usage: u, USD: usd, Known: known}
	} else {
		worst, usd, known := r.m.prices.WorstCase(r.req, u)
		ch = Charge{Usage: worst, USD: usd, Known: known, Estimated: true}
	}
	ch.ReservedUSD = r.usd
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.unhold(r) {
		return Charge{}
	}
	m.add(ch.USD, ch.Known, u.Complete, ch.Estimated)
	return ch
}

// Summary is a meter's running total.
type Summary struct {
	PriceTable   string  `json:"price_table"`
	BudgetUSD    float64 `json:"budget_usd"`
	SpentUSD     float64 `json:"spent_usd"`
	Calls        int     `json:"calls"`
	UnknownModel int     `json:"calls_unknown_model"`
	Partial      int     `json:"calls_partial_usage"`
	Estimated    int     `json:"calls_estimated"` // charged their worst case
	// ReservedUSD is the worst case held by the InFlight calls not yet settled.
	ReservedUSD float64 `json:"reserved_usd"`
	InFlight    int     `json:"calls_in_flight"`
	// Refused are the calls refused for want of budget: their worst case did not fit,
	// or the budget was spent already.
	Refused int `json:"calls_refused_over_budget"`
}

// Summary returns the running total.
func (m *Meter) Summary() Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Summary{PriceTable: m.prices.Version, BudgetUSD: m.budget, SpentUSD: m.spent, Calls: m.calls, UnknownModel: m.unknown, Partial: m.partial,
		Estimated: m.estimated, ReservedUSD: m.reserved, InFlight: m.inFlight, Refused: m.refused}
}
