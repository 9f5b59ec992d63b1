package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/textcut"
)

// ErrUnusableUsage is agentrt.ErrUnusableUsage: a provider reported usage that
// cannot be charged.
var ErrUnusableUsage = agentrt.ErrUnusableUsage

// UsageError says which usage field could not be believed and why. It matches
// agentrt.ErrUnusableUsage.
type UsageError struct {
	Field  string
	Reason string
}

func (e *UsageError) Error() string {
	if e.Field == "" {
		return "agentrt: unusable usage: " + e.Reason
	}
	return fmt.Sprintf("agentrt: unusable usage: %s %s", e.Field, e.Reason)
}

// Is matches agentrt.ErrUnusableUsage.
func (e *UsageError) Is(target error) bool { return target == agentrt.ErrUnusableUsage }

// UsageCount reads one token count as the provider sent it. An absent value or
// null is 0. Otherwise only a plain JSON integer literal that is not negative
// and fits in an int64 is accepted: "1.0", "1e3", "-1", "+1", a string, a
// boolean, an object, and a number past 2^63-1 are a *UsageError naming field.
func UsageCount(field string, raw json.RawMessage) (int64, error) {
	v := bytes.TrimSpace(raw)
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	bad := func(reason string) (int64, error) {
		return 0, &UsageError{Field: field, Reason: fmt.Sprintf("%s (got %s)", reason, textcut.Truncate(Excerpt(v), 40))}
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return bad("is not a non-negative integer")
		}
	}
	if len(v) > 1 && v[0] == '0' {
		return bad("is not a plain integer literal")
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return bad("does not fit in a 64-bit integer")
	}
	return n, nil
}

// CheckUsage refuses usage that cannot be charged: a negative count, or more
// cached input than input. The error matches agentrt.ErrUnusableUsage.
func CheckUsage(u agentrt.Usage) error {
	switch {
	case u.InputTokens < 0:
		return &UsageError{Field: "input tokens", Reason: fmt.Sprintf("is negative (%d)", u.InputTokens)}
	case u.OutputTokens < 0:
		return &UsageError{Field: "output tokens", Reason: fmt.Sprintf("is negative (%d)", u.OutputTokens)}
	case u.CachedInputTokens < 0:
		return &UsageError{Field: "cached input tokens", Reason: fmt.Sprintf("is negative (%d)", u.CachedInputTokens)}
	case u.CachedInputTokens > u.InputTokens:
		return &UsageError{Field: "cached input tokens", Reason: fmt.Sprintf("%d exceed input tokens %d", u.CachedInputTokens, u.InputTokens)}
	}
	return nil
}

// AddCounts adds token counts, refusing a sum that overflows with a
// *UsageError naming field.
func AddCounts(field string, counts ...int64) (int64, error) {
	var sum int64
	for _, c := range counts {
		if c < 0 {
			return 0, &UsageError{Field: field, Reason: fmt.Sprintf("has a negative part (%d)", c)}
		}
		if sum > (1<<63-1)-c {
			return 0, &UsageError{Field: field, Reason: "overflows a 64-bit integer when its parts are summed"}
		}
		sum += c
	}
	return sum, nil
}

// Counts reads a reply's token counts one after another and keeps the
// first error, so an adapter's usage decoder reads as the list of its
// fields. After an error every further count is 0 and Usage returns that
// error.
type Counts struct{ err error }

// Read is UsageCount of field's raw value.
func (c *Counts) Read(field string, raw json.RawMessage) int64 {
	if c.err != nil {
		return 0
	}
	n, err := UsageCount(field, raw)
	c.err = err
	return n
}

// Sum is AddCounts of parts, named field.
func (c *Counts) Sum(field string, parts ...int64) int64 {
	if c.err != nil {
		return 0
	}
	n, err := AddCounts(field, parts...)
	c.err = err
	return n
}

// Usage returns u once CheckUsage passes it, or the first error a count
// met.
func (c *Counts) Usage(u agentrt.Usage) (agentrt.Usage, error) {
	if c.err == nil {
		c.err = CheckUsage(u)
	}
	if c.err != nil {
		return agentrt.Usage{}, c.err
	}
	return u, nil
}

// Unusable is the error an adapter returns for a reply whose usage cannot be
// believed: a ServedError with zero usage wrapping err, so the accounting
// caller charges its own estimate.
func Unusable(err error) error {
	return &agentrt.ServedError{Err: err}
}
