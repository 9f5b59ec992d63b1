package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// Only a plain non-negative integer literal that fits is a count; absent and
// null are zero; everything else is unusable and names the field.
func TestUsageCount_OnlyANonNegativeIntegerThatFits(t *testing.T) {
	ok := map[string]int64{
		"":                    0,
		"null":                0,
		" 0 ":                 0,
		"7":                   7,
		"9223372036854775807": 1<<63 - 1,
	}
	for raw, want := range ok {
		got, err := UsageCount("usage.prompt_tokens", json.RawMessage(raw))
		if err != nil || got != want {
			t.Errorf("UsageCount(%q) = %d, %v; want %d", raw, got, err, want)
		}
	}
	for _, raw := range []string{"-1", "-0", "1.0", "1.5", "1e3", "1E3", "+1", "01", `"5"`, "true", "{}", "[]",
		"9223372036854775808", "99999999999999999999999", "0x10", "NaN", "Infinity", "1 2"} {
		got, err := UsageCount("usage.prompt_tokens", json.RawMessage(raw))
		if !errors.Is(err, agentrt.ErrUnusableUsage) || got != 0 {
			t.Errorf("UsageCount(%q) = %d, %v; want ErrUnusableUsage", raw, got, err)
			continue
		}
		if !strings.Contains(err.Error(), "usage.prompt_tokens") {
			t.Errorf("UsageCount(%q): error %q does not name the field", raw, err)
		}
	}
}

// Negative counts and more cached than input are unusable.
func TestCheckUsage_NegativeOrMoreCachedThanInputIsUnusable(t *testing.T) {
	good := []agentrt.Usage{{}, {InputTokens: 10, OutputTokens: 5, CachedInputTokens: 10}}
	for _, u := range good {
		if err := CheckUsage(u); err != nil {
			t.Errorf("CheckUsage(%+v) = %v", u, err)
		}
	}
	bad := []agentrt.Usage{{InputTokens: -1}, {OutputTokens: -1}, {CachedInputTokens: -1}, {InputTokens: 3, CachedInputTokens: 4}}
	for _, u := range bad {
		if err := CheckUsage(u); !errors.Is(err, agentrt.ErrUnusableUsage) {
			t.Errorf("CheckUsage(%+v) = %v, want ErrUnusableUsage", u, err)
		}
	}
	if _, err := AddCounts("input", 1<<62, 1<<62, 1<<62); !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Errorf("an overflowing sum: %v", err)
	}
	if n, err := AddCounts("input", 1, 2, 3); n != 6 || err != nil {
		t.Errorf("AddCounts = %d, %v", n, err)
	}
}

// An unpriced name is refused; a free one is priced at zero.
func TestPriceFor_UnpricedModelRefused(t *testing.T) {
	table := agentrt.PriceTable{"paid": {InputPerMTok: 1_000_000}}
	if _, err := PriceFor(table, "other"); !errors.Is(err, ErrNoPrice) {
		t.Fatalf("unpriced: %v", err)
	}
	if p, err := PriceFor(table, "paid"); err != nil || p.InputPerMTok != 1_000_000 {
		t.Fatalf("priced: %v %v", p, err)
	}
}

// Free records names at zero, which PriceFor accepts.
func TestFree_DistinguishesFreeFromUnpriced(t *testing.T) {
	table := Free("ollama:llama3")
	if p, err := PriceFor(table, "ollama:llama3"); err != nil || p != (agentrt.Price{}) {
		t.Fatalf("free: %v %v", p, err)
	}
	if _, err := PriceFor(table, "llama3"); !errors.Is(err, ErrNoPrice) {
		t.Fatalf("a bare id is not priced: %v", err)
	}
}

// A later table wins.
func TestMerge_LaterTableWins(t *testing.T) {
	a := agentrt.PriceTable{"m": {InputPerMTok: 1}, "a": {InputPerMTok: 2}}
	b := agentrt.PriceTable{"m": {InputPerMTok: 3}}
	got := Merge(a, b)
	if got["m"].InputPerMTok != 3 || got["a"].InputPerMTok != 2 || len(got) != 2 {
		t.Fatalf("Merge = %v", got)
	}
	if a["m"].InputPerMTok != 1 {
		t.Fatal("Merge changed its input")
	}
}

// Dollar amounts parse to micros; everything else is refused.
func TestParseDollars_AcceptedForms(t *testing.T) {
	ok := map[string]agentrt.Micros{
		"5": 5_000_000, "4.41": 4_410_000, "$0.50": 500_000, " 12 ": 12_000_000, "0": 0,
		"0.000001": 1, "0.0000005": 1, "0.0000004": 0, ".5": 500_000, "9223372036854.775807": 1<<63 - 1,
	}
	for s, want := range ok {
		if got, err := ParseDollars(s); err != nil || got != want {
			t.Errorf("ParseDollars(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "$", ".", "5.", "-1", "1e3", "1,000", "five", "NaN", "Inf", "$-1", "1.2.3",
		"9223372036854.775808", "99999999999999999999", "$ 5"} {
		if _, err := ParseDollars(s); !errors.Is(err, ErrDollars) {
			t.Errorf("ParseDollars(%q) = %v, want ErrDollars", s, err)
		}
	}
}

func ExamplePriceFor() {
	_, err := PriceFor(Free("ollama:llama3"), "openai:a-paid-model")
	fmt.Println(err)
	// Output: openai:a-paid-model: no price for this model
}

func ExampleParseDollars() {
	m, _ := ParseDollars("$0.50")
	fmt.Println(m)
	// Output: 500000
}

// Counts keeps the first bad count: later reads and sums are zero, and
// Usage reports that count's field, not a later one's or CheckUsage's.
func TestCounts_KeepTheFirstError(t *testing.T) {
	var c Counts
	if n := c.Read("usage.a", json.RawMessage("3")); n != 3 {
		t.Fatalf("Read = %d, want 3", n)
	}
	if n := c.Read("usage.b", json.RawMessage("-1")); n != 0 {
		t.Fatalf("Read of a bad count = %d, want 0", n)
	}
	if n := c.Read("usage.c", json.RawMessage("5")); n != 0 {
		t.Errorf("Read after an error = %d, want 0", n)
	}
	if n := c.Sum("usage.d", 1, 2); n != 0 {
		t.Errorf("Sum after an error = %d, want 0", n)
	}
	u, err := c.Usage(agentrt.Usage{InputTokens: 1, CachedInputTokens: 2})
	if !errors.Is(err, agentrt.ErrUnusableUsage) || !strings.Contains(err.Error(), "usage.b") || u != (agentrt.Usage{}) {
		t.Errorf("Usage = %+v, %v; want the error naming usage.b", u, err)
	}

	var ok Counts
	if n := ok.Sum("usage.sum", ok.Read("usage.a", json.RawMessage("2")), 3); n != 5 {
		t.Errorf("Sum = %d, want 5", n)
	}
	if _, err := ok.Usage(agentrt.Usage{InputTokens: 1, CachedInputTokens: 2}); !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Errorf("Usage of more cached than input = %v, want CheckUsage's refusal", err)
	}
	var fine Counts
	if u, err := fine.Usage(agentrt.Usage{InputTokens: 5, OutputTokens: 1}); err != nil || u.InputTokens != 5 {
		t.Errorf("Usage = %+v, %v", u, err)
	}
}
