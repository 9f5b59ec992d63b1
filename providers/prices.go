package providers

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/textcut"
)

// ErrNoPrice says a model name has no entry in a price table. An
// agentrt.PriceTable charges an absent model nothing, so a spend cap only
// holds for a model that is priced; PriceFor refuses to pretend otherwise.
var ErrNoPrice = errors.New("providers: no price for this model")

// NoPriceError names the unpriced model. It matches ErrNoPrice.
type NoPriceError struct{ Name string }

func (e *NoPriceError) Error() string { return e.Name + ": no price for this model" }

// Is matches ErrNoPrice.
func (e *NoPriceError) Is(target error) bool { return target == ErrNoPrice }

// PriceFor returns the price of name in table, refusing a name the table does
// not hold with a *NoPriceError. A name held with a zero Price is free.
func PriceFor(table agentrt.PriceTable, name string) (agentrt.Price, error) {
	p, ok := table[name]
	if !ok {
		return agentrt.Price{}, &NoPriceError{Name: name}
	}
	return p, nil
}

// Free records each name at a zero price, so a local model is declared free
// rather than left unpriced.
func Free(names ...string) agentrt.PriceTable {
	t := make(agentrt.PriceTable, len(names))
	for _, n := range names {
		t[n] = agentrt.Price{}
	}
	return t
}

// Merge returns one table holding every entry of tables; for a name in more
// than one, the later table wins.
func Merge(tables ...agentrt.PriceTable) agentrt.PriceTable {
	out := agentrt.PriceTable{}
	for _, t := range tables {
		maps.Copy(out, t)
	}
	return out
}

// ErrDollars says an amount of dollars did not parse.
var ErrDollars = errors.New("providers: not an amount of dollars")

// DollarsError names the refused text and why. It matches ErrDollars.
type DollarsError struct {
	Text   string
	Reason string
}

func (e *DollarsError) Error() string {
	return fmt.Sprintf("providers: %q is not an amount of dollars: %s", e.Text, e.Reason)
}

// Is matches ErrDollars.
func (e *DollarsError) Is(target error) bool { return target == ErrDollars }

// ParseDollars reads an amount such as "5", "4.41" or "$0.50" (surrounding
// space allowed) as micros, rounding past the sixth decimal to the nearest
// micro. Negative amounts, exponents, grouping commas, words, and amounts
// past what Micros holds are refused with a *DollarsError.
func ParseDollars(s string) (agentrt.Micros, error) {
	text := textcut.Truncate(s, 64)
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "$")
	whole, frac, dot := strings.Cut(t, ".")
	if whole == "" && (!dot || frac == "") {
		return 0, &DollarsError{Text: text, Reason: "it holds no digits"}
	}
	if !allDigits(whole) || !allDigits(frac) || (dot && frac == "") {
		return 0, &DollarsError{Text: text, Reason: `write digits with an optional "$" and at most one decimal point, like 4.41`}
	}
	const maxMicros = 1<<63 - 1
	var micros int64
	for i := 0; i < len(whole); i++ {
		d := int64(whole[i] - '0')
		if micros > (maxMicros-d)/10 {
			return 0, &DollarsError{Text: text, Reason: "it is too large"}
		}
		micros = micros*10 + d
	}
	if micros > maxMicros/1_000_000 {
		return 0, &DollarsError{Text: text, Reason: "it is too large"}
	}
	micros *= 1_000_000
	var f int64
	for i := 0; i < 6; i++ {
		f *= 10
		if i < len(frac) {
			f += int64(frac[i] - '0')
		}
	}
	if len(frac) > 6 && frac[6] >= '5' {
		f++
	}
	if micros > maxMicros-f {
		return 0, &DollarsError{Text: text, Reason: "it is too large"}
	}
	return agentrt.Micros(micros + f), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
