// Package meter reads token usage from model API responses (JSON bodies and SSE streams)
// as they are forwarded, prices it with a versioned table and keeps a run's cost against
// its budget.
package meter

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed prices.yaml
var defaultPrices []byte

// Price is US dollars per million tokens.
type Price struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheWrite float64 `yaml:"cache_write"`
	CacheRead  float64 `yaml:"cache_read"`
}

// Prices is a price table.
type Prices struct {
	Version string           `yaml:"version"`
	Default Price            `yaml:"default"`
	Models  map[string]Price `yaml:"models"`
}

// DefaultPrices returns the table embedded in this build.
func DefaultPrices() (*Prices, error) {
	return ParsePrices(defaultPrices)
}

// ParsePrices decodes a price table strictly: unknown fields, a missing version or a
// missing default are errors.
func ParsePrices(data []byte) (*Prices, error) {
	var p Prices
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("failed to parse price table: %w", err)
	}
	if p.Version == "" {
		return nil, fmt.Errorf("failed to parse price table: no version")
	}
	if p.Default.Input <= 0 || p.Default.Output <= 0 {
		return nil, fmt.Errorf("failed to parse price table: the default row needs input and output prices")
	}
	for name, pr := range p.Models {
		if pr.Input < 0 || pr.Output < 0 || pr.CacheRead < 0 || pr.CacheWrite < 0 {
			return nil, fmt.Errorf("failed to parse price table: negative price for %s", name)
		}
	}
	return &p, nil
}

// Lookup returns the price of model and whether the model was found (otherwise the
// default row is returned).
func (p *Prices) Lookup(model string) (Price, bool) {
	best, found := "", false
	for name := range p.Models {
		if (model == name || strings.HasPrefix(model, name+"-")) && len(name) > len(best) {
			best, found = name, true
		}
	}
	if !found {
		return p.Default, false
	}
	return p.Models[best], true
}

// Cost prices u. known is false when the model was not in the table.
func (p *Prices) Cost(u Usage) (usd float64, known bool) {
	pr, known := p.Lookup(u.Model)
	input := u.Input
	if u.CachedIncluded {
		input -= u.CacheRead
		if input < 0 {
			input = 0
		}
	}
	usd = (float64(input)*pr.Input + float64(u.Output)*pr.Output +
		float64(u.CacheWrite)*pr.CacheWrite + float64(u.CacheRead)*pr.CacheRead) / 1e6
	return usd, known
}
