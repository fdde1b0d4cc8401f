package llm

import (
	"sort"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok" yaml:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok" yaml:"output_per_mtok"`
	// CachedInputPerMTok prices input served from a prompt cache; zero means
	// the same as InputPerMTok.
	CachedInputPerMTok float64 `json:"cached_input_per_mtok,omitempty" yaml:"cached_input_per_mtok"`
}

// Cost is the price of u in US dollars.
func (p Price) Cost(u Usage) float64 {
	cached := u.CachedInputTokens
	if cached > u.InputTokens {
		cached = u.InputTokens
	}
	cachedRate := p.CachedInputPerMTok
	if cachedRate == 0 {
		cachedRate = p.InputPerMTok
	}
	return (float64(u.InputTokens-cached)*p.InputPerMTok +
		float64(cached)*cachedRate +
		float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// PriceTable maps a model name to its price. A key ending in "*" matches
// every model with that prefix; the longest match wins, an exact name first.
type PriceTable map[string]Price

// Lookup returns the price of model.
func (t PriceTable) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	var keys []string
	for k := range t {
		if strings.HasSuffix(k, "*") && strings.HasPrefix(model, strings.TrimSuffix(k, "*")) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return Price{}, false
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	return t[keys[0]], true
}
