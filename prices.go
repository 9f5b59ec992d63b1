package agentrt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/agentrt/agentrt/internal/canon"
)

// maxPrice bounds one rate, in micros per million tokens ($1M per million
// tokens): far above any model's price, low enough that a reservation's
// arithmetic is exact.
const maxPrice = 1_000_000_000_000

// PriceVersion is an immutable price table: its ID is the SHA-256 of its
// canonical JSON, so a table changed in any way is another version, and a
// reservation or settlement that names a version names exactly the prices
// it was charged at. Stores keep every version ever used; none is changed
// or deleted.
type PriceVersion struct {
	ID        string     `json:"id"`
	Table     PriceTable `json:"table"`
	Canonical []byte     `json:"-"`
	CreatedAt time.Time  `json:"created_at,omitzero"`
	// DecodeError is set when the stored row did not decode or does not
	// hash to its id.
	DecodeError string `json:"decode_error,omitempty"`
}

// NewPriceVersion checks t and makes its version: every rate 0 to 10^12
// micros per million tokens, cached input no dearer than input, model names
// non-empty.
func NewPriceVersion(t PriceTable) (PriceVersion, error) {
	for name, p := range t {
		if name == "" || len(name) > 256 {
			return PriceVersion{}, &ConfigError{Field: "price table", Reason: fmt.Sprintf("names a model %q; names are 1 to 256 bytes", name)}
		}
		for _, r := range []struct {
			what string
			v    Micros
		}{{"input", p.InputPerMTok}, {"output", p.OutputPerMTok}, {"cached input", p.CachedInputPerMTok}} {
			if r.v < 0 || r.v > maxPrice {
				return PriceVersion{}, &ConfigError{Field: fmt.Sprintf("price of %q", name), Reason: fmt.Sprintf("%s rate %d is outside 0 to %d micros per million tokens", r.what, r.v, int64(maxPrice))}
			}
		}
		if p.CachedInputPerMTok > p.InputPerMTok {
			return PriceVersion{}, &ConfigError{Field: fmt.Sprintf("price of %q", name), Reason: "cached input must not cost more than input"}
		}
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return PriceVersion{}, err
	}
	c, err := canon.Canonical(raw)
	if err != nil {
		return PriceVersion{}, err
	}
	return PriceVersion{ID: "sha256:" + canon.HashBytes(c), Table: clonePrices(t), Canonical: c}, nil
}

// ParsePriceVersion reads a price table's JSON ({"model": {"input_per_mtok":
// …}}) as a version. Unknown fields are refused.
func ParsePriceVersion(raw []byte) (PriceVersion, error) {
	if err := canon.Check(raw); err != nil {
		return PriceVersion{}, fmt.Errorf("agentrt: price table: %w", err)
	}
	var t PriceTable
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return PriceVersion{}, fmt.Errorf("agentrt: price table: %w", err)
	}
	return NewPriceVersion(t)
}

func clonePrices(t PriceTable) PriceTable {
	out := make(PriceTable, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}

// enginePrices versions the table an engine charges at: EngineConfig.Prices,
// or else ModelConfig.Prices. Model.Prices that do not make a valid version
// still price the run's own limits, as before, but price no budget.
func enginePrices(cfg EngineConfig) (*PriceVersion, error) {
	var legacy PriceTable
	if cfg.Model != nil {
		legacy = cfg.Model.Prices
	}
	switch {
	case cfg.Prices != nil && legacy != nil:
		return nil, &ConfigError{Field: "Config.Prices", Reason: "and Config.Model.Prices are both set; set one"}
	case cfg.Prices != nil:
		v, err := NewPriceVersion(cfg.Prices)
		if err != nil {
			return nil, err
		}
		return &v, nil
	case legacy != nil:
		if v, err := NewPriceVersion(legacy); err == nil {
			return &v, nil
		}
	}
	return nil, nil
}

// Cost prices usage at p: uncached input, cached input and output, each
// floored to a whole micro, saturating. It is the figure a settlement
// records for a call's reported usage.
func (p Price) Cost(u Usage) Micros { return costOf(p, u) }

// costOf prices usage: uncached input, cached input and output, each
// floored to a whole micro. The products are taken in 128 bits, negative
// counts and prices count as zero, and the sum saturates at the largest
// Micros.
func costOf(p Price, u Usage) Micros {
	cached := max(u.CachedInputTokens, 0)
	uncached := max(max(u.InputTokens, 0)-cached, 0)
	sum := satAdd(int64(perMillion(uncached, p.InputPerMTok)), int64(perMillion(cached, p.CachedInputPerMTok)))
	return Micros(satAdd(sum, int64(perMillion(max(u.OutputTokens, 0), p.OutputPerMTok))))
}

// perMillion is floor(n * perMTok / 1e6), saturating.
func perMillion(n int64, perMTok Micros) Micros {
	if n <= 0 || perMTok <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), uint64(perMTok))
	if hi >= 1_000_000 {
		return math.MaxInt64 // the quotient does not fit in 64 bits
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return Micros(q)
}
