package meter

import (
	"fmt"
	"sync"
)

// Meter keeps one run's model cost against its budget. It is safe for concurrent use.
type Meter struct {
	prices *Prices
	budget float64 // USD; 0 means no cap

	mu        sync.Mutex
	spent     float64
	calls     int
	unknown   int // calls priced with the default row
	partial   int // calls whose stream ended before the final usage
	estimated int // calls charged their worst case for want of a usage report
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
// the budget is spent.
func (m *Meter) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.budget > 0 && m.spent >= m.budget {
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
	m.spent += usd
	m.calls++
	if !known {
		m.unknown++
	}
	if !u.Complete {
		m.partial++
	}
	return usd, known
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
}

// Settle charges one call that can generate tokens. With a final usage report (u.Complete)
// it is charged what the report says; without one (a stream cut off, an error, a body
// without usage) it is charged the worst case for req, so that losing the usage never
// makes a call cheaper.
func (m *Meter) Settle(req Request, u Usage) Charge {
	if u.Complete {
		usd, known := m.Record(u)
		return Charge{Usage: u, USD: usd, Known: known}
	}
	worst, usd, known := m.prices.WorstCase(req, u)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spent += usd
	m.calls++
	m.partial++
	m.estimated++
	if !known {
		m.unknown++
	}
	return Charge{Usage: worst, USD: usd, Known: known, Estimated: true}
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
}

// Summary returns the running total.
func (m *Meter) Summary() Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Summary{PriceTable: m.prices.Version, BudgetUSD: m.budget, SpentUSD: m.spent, Calls: m.calls, UnknownModel: m.unknown, Partial: m.partial,
		Estimated: m.estimated}
}
