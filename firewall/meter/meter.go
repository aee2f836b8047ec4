package meter

import (
	"fmt"
	"sync"
)

// Meter keeps one run's model cost against its budget. It is safe for concurrent use.
type Meter struct {
	prices *Prices
	budget float64 // USD; 0 means no cap

	mu      sync.Mutex
	spent   float64
	calls   int
	unknown int // calls priced with the default row
	partial int // calls whose stream ended before the final usage
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

// Summary is a meter's running total.
type Summary struct {
	PriceTable   string  `json:"price_table"`
	BudgetUSD    float64 `json:"budget_usd"`
	SpentUSD     float64 `json:"spent_usd"`
	Calls        int     `json:"calls"`
	UnknownModel int     `json:"calls_unknown_model"`
	Partial      int     `json:"calls_partial_usage"`
}

// Summary returns the running total.
func (m *Meter) Summary() Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Summary{PriceTable: m.prices.Version, BudgetUSD: m.budget, SpentUSD: m.spent, Calls: m.calls, UnknownModel: m.unknown, Partial: m.partial}
}
