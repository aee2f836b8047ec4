// Package meter reads token usage from model API responses (JSON bodies and SSE streams)
// as they are forwarded, prices it with a versioned table and keeps a run's cost against
// its budget.
package meter

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

//go:embed prices.yaml
var defaultPrices []byte

// Price is one row of the table: US dollars per million tokens, and the model's token
// limits, which bound what a call can cost when its response reports no usage.
type Price struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheWrite float64 `yaml:"cache_write"`
	CacheRead  float64 `yaml:"cache_read"`
	// MaxOutput is the most output tokens one call can produce (the largest max_tokens
	// the API accepts for the model). 0 in a model row: the default row's.
	MaxOutput int64 `yaml:"max_output"`
	// Context is the model's context window in tokens: no call's input can be larger.
	// 0 in a model row: the default row's.
	Context int64 `yaml:"context"`
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
	// The default row's limits stand for every model that has none, and bound the worst
	// case of an unknown model, so they must be there.
	if p.Default.MaxOutput <= 0 || p.Default.Context <= 0 {
		return nil, fmt.Errorf("failed to parse price table: the default row needs max_output and context")
	}
	for name, pr := range p.Models {
		if pr.Input < 0 || pr.Output < 0 || pr.CacheRead < 0 || pr.CacheWrite < 0 {
			return nil, fmt.Errorf("failed to parse price table: negative price for %s", name)
		}
		if pr.MaxOutput < 0 || pr.Context < 0 {
			return nil, fmt.Errorf("failed to parse price table: negative token limit for %s", name)
		}
	}
	return &p, nil
}

// Lookup returns the price of model and whether the model was found (otherwise the
// default row is returned). A model matches a row only when it is the row's name, or the
// name followed by a snapshot date ("-2025-08-07", "-20250514") or "-latest": never by a
// shared prefix, since a longer name is often a dearer variant of the shorter one
// ("o3-pro" of "o3", "gpt-5-pro" of "gpt-5"), which the default row covers until the
// table has its own row. Token limits a model row leaves out are the default row's.
func (p *Prices) Lookup(model string) (Price, bool) {
	pr, found := p.Models[model]
	if !found {
		if base, ok := snapshotBase(model); ok {
			pr, found = p.Models[base]
		}
	}
	if !found {
		return p.Default, false
	}
	if pr.MaxOutput == 0 {
		pr.MaxOutput = p.Default.MaxOutput
	}
	if pr.Context == 0 {
		pr.Context = p.Default.Context
	}
	return pr, true
}

// snapshotDate is the suffix a provider adds to a model's name for a dated snapshot of
// it, or "-latest" for the alias of its newest one.
var snapshotDate = regexp.MustCompile(`-(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{8}|latest)$`)

// snapshotBase returns model without its snapshot suffix, if it has one.
func snapshotBase(model string) (string, bool) {
	loc := snapshotDate.FindStringIndex(model)
	if loc == nil || loc[0] == 0 {
		return "", false
	}
	return model[:loc[0]], true
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
