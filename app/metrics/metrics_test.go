package metrics

import (
	"math"
	"testing"
)

// gathered reads the registry: each series of the families named, by its outcome
// label ("" for a series without one).
func gathered(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			label := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "outcome" {
					label = l.GetValue()
				}
			}
			out[label] = s.GetCounter().GetValue()
		}
	}
	return out
}

// TestOutcomesAndSpend: every outcome is a series from the start, at zero; each
// reported outcome counts once under its own label, and spend adds up in dollars.
func TestOutcomesAndSpend(t *testing.T) {
	m := New(func() map[string]int { return nil })
	zero := gathered(t, m, "bumper_items_outcome_total")
	for _, o := range Outcomes {
		if v, ok := zero[o]; !ok || v != 0 {
			t.Errorf("outcome %q before any: %v, %v; want a series at 0", o, v, ok)
		}
	}
	for _, tc := range []struct {
		outcome string
		micro   int64
	}{
		{"done", 1_234_567}, {"done", 500_000}, {"stopped", 0}, {"failed", -5},
	} {
		m.Outcome(tc.outcome)
		m.Spend(tc.micro)
	}
	got := gathered(t, m, "bumper_items_outcome_total")
	for _, tc := range []struct {
		outcome string
		want    float64
	}{
		{"done", 2}, {"stopped", 1}, {"failed", 1}, {"error", 0},
	} {
		if got[tc.outcome] != tc.want {
			t.Errorf("bumper_items_outcome_total{outcome=%q} = %v; want %v", tc.outcome, got[tc.outcome], tc.want)
		}
	}
	if spend := gathered(t, m, "bumper_spend_usd_total")[""]; math.Abs(spend-1.734567) > 1e-9 {
		t.Errorf("bumper_spend_usd_total = %v; want 1.734567", spend)
	}
}
