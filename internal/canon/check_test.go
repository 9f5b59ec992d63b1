package canon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/canon"
)

// wantRefused asserts that Check refuses in with exactly reason, and that
// every entry point built on it refuses the same way.
func wantRefused(t *testing.T, in, reason string) {
	t.Helper()
	err := canon.Check([]byte(in))
	var ce *canon.Error
	if !errors.As(err, &ce) {
		t.Errorf("Check(%.60q) = %v, want refusal %q", in, err, reason)
		return
	}
	if ce.Reason != reason {
		t.Errorf("Check(%.60q) reason = %q, want %q", in, ce.Reason, reason)
	}
	if !errors.Is(err, canon.ErrInvalid) {
		t.Errorf("Check(%.60q) error %v does not match ErrInvalid", in, err)
	}
	if out, err := canon.Canonical([]byte(in)); err == nil {
		t.Errorf("Canonical(%.60q) = %q, want refusal", in, out)
	}
	if out, err := canon.Policy([]byte(in)); err == nil {
		t.Errorf("Policy(%.60q) = %q, want refusal", in, out)
	}
	if h, err := canon.Hash([]byte(in)); err == nil || h != "" {
		t.Errorf("Hash(%.60q) = %q, %v, want refusal", in, h, err)
	}
	if reason != canon.ReasonDuplicateKey {
		if out, err := canon.PolicyUnchecked([]byte(in)); err == nil {
			t.Errorf("PolicyUnchecked(%.60q) = %q, want refusal", in, out)
		}
	}
}

func wantAccepted(t *testing.T, in string) {
	t.Helper()
	if err := canon.Check([]byte(in)); err != nil {
		t.Errorf("Check(%.60q) = %v, want accepted", in, err)
	}
	if _, err := canon.Canonical([]byte(in)); err != nil {
		t.Errorf("Canonical(%.60q) = %v, want accepted", in, err)
	}
}

// Each document here would decode to something other than what was sent, or
// to the same value as a different document, so hashing it would be lossy.
func TestCheckJSON_RejectsWhatWouldHashLossily(t *testing.T) {
	cases := []struct{ name, in, reason string }{
		{"empty", "", canon.ReasonSyntax},
		{"whitespace only", " \n\t", canon.ReasonSyntax},
		{"unclosed object", `{"a":1`, canon.ReasonSyntax},
		{"unclosed array", `[1,2`, canon.ReasonSyntax},
		{"key without value", `{"a"}`, canon.ReasonSyntax},
		{"trailing comma in array", `[1,]`, canon.ReasonSyntax},
		{"trailing comma in object", `{"a":1,}`, canon.ReasonSyntax},
		{"leading zero", `01`, canon.ReasonSyntax},
		{"bare point", `1.`, canon.ReasonSyntax},
		{"leading point", `.5`, canon.ReasonSyntax},
		{"plus sign", `+1`, canon.ReasonSyntax},
		{"empty exponent", `1e`, canon.ReasonSyntax},
		{"bare minus", `-`, canon.ReasonSyntax},
		{"truncated literal", `tru`, canon.ReasonSyntax},
		{"NaN", `NaN`, canon.ReasonSyntax},
		{"single quotes", `'a'`, canon.ReasonSyntax},
		{"unterminated string", `"abc`, canon.ReasonSyntax},
		{"unknown escape", `"\x41"`, canon.ReasonSyntax},
		{"short unicode escape", `"\u12"`, canon.ReasonSyntax},
		{"raw control in string", "\"a\tb\"", canon.ReasonSyntax},
		{"non-string key", `{1:2}`, canon.ReasonSyntax},
		{"two values", `1 2`, canon.ReasonSyntax},
		{"two objects", `{} {}`, canon.ReasonSyntax},
		{"extra closer", `[]]`, canon.ReasonSyntax},
		{"byte order mark", "\ufeff{}", canon.ReasonSyntax},

		{"invalid byte", "\"\xff\"", canon.ReasonUTF8},
		{"truncated sequence", "\"\xe2\x82\"", canon.ReasonUTF8},
		{"encoded surrogate", "\"\xed\xa0\x80\"", canon.ReasonUTF8},
		{"overlong encoding", "\"\xc0\xaf\"", canon.ReasonUTF8},
		{"invalid byte outside string", "[1,\xff]", canon.ReasonUTF8},

		{"lone high surrogate", `"\ud800"`, canon.ReasonSurrogate},
		{"lone low surrogate", `"\udc00"`, canon.ReasonSurrogate},
		{"high then letter", `"\ud800x"`, canon.ReasonSurrogate},
		{"high then escaped letter", `"\ud800\u0041"`, canon.ReasonSurrogate},
		{"high then high", `"\ud83d\ud83d"`, canon.ReasonSurrogate},
		{"low then high", `"\ude00\ud83d"`, canon.ReasonSurrogate},
		{"pair then lone low", `"\ud83d\ude00\ude00"`, canon.ReasonSurrogate},
		{"surrogate in key", `{"\udfff":1}`, canon.ReasonSurrogate},

		{"repeated key", `{"a":1,"a":2}`, canon.ReasonDuplicateKey},
		{"repeated key escaped spelling", `{"a":1,"\u0061":2}`, canon.ReasonDuplicateKey},
		{"repeated key solidus spelling", `{"a/b":1,"a\/b":2}`, canon.ReasonDuplicateKey},
		{"repeated key same value", `{"a":1,"b":0,"a":1}`, canon.ReasonDuplicateKey},
		{"repeated empty key", `{"":1,"":2}`, canon.ReasonDuplicateKey},
		{"repeated key nested", `[{"x":{"y":[{"k":1,"k":2}]}}]`, canon.ReasonDuplicateKey},

		// With several faults, the reason follows the order of Check.
		{"malformed after repeated key", `{"a":1,"a":2`, canon.ReasonSyntax},
		{"malformed after lone surrogate", `["\ud800"`, canon.ReasonSyntax},
		{"invalid UTF-8 and malformed", "[\"\xff\"", canon.ReasonUTF8},
		{"surrogate after repeated key", `{"a":1,"a":"\ud800"}`, canon.ReasonSurrogate},
		{"repeated key after huge number", `[1e-10000000,{"a":1,"a":2}]`, canon.ReasonDuplicateKey},
		{"surrogate after huge number", `[1e-10000000,"\udc00"]`, canon.ReasonSurrogate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantRefused(t, c.in, c.reason) })
	}

	// Valid surrogate pairs are the only way to escape characters beyond the
	// BMP, so they must be accepted and decode to the character itself.
	for in, want := range map[string]string{
		`"\ud83d\ude00"`:             `"😀"`,
		`"\uD83D\uDE00"`:             `"😀"`,
		`"a\ud800\udc00b"`:           "\"a\U00010000b\"",
		`"\udbff\udfff"`:             "\"\U0010FFFF\"",
		`{"\ud83d\ude00":"😀"}`:       `{"😀":"😀"}`,
		`"\ud83d\ude00\ud83d\ude01"`: `"😀😁"`,
	} {
		got, err := canon.Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// A document nested past the bound is refused before anything else is looked
// at, and brackets inside strings do not count.
func TestCheckJSON_RefusesDeepNesting(t *testing.T) {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	wantAccepted(t, nest(256, "[", "]"))
	wantRefused(t, nest(257, "[", "]"), canon.ReasonDepth)
	wantAccepted(t, nest(255, `{"a":`, "")+"{}"+strings.Repeat("}", 255))
	wantRefused(t, nest(257, `{"a":`, "")+"1"+strings.Repeat("}", 257), canon.ReasonDepth)
	wantRefused(t, nest(128, `[{"a":`, "")+"[1]"+strings.Repeat("}]", 128), canon.ReasonDepth)
	wantAccepted(t, nest(128, `[{"a":`, "")+"1"+strings.Repeat("}]", 128))

	// Depth is refused even when the rest is malformed or not UTF-8.
	wantRefused(t, strings.Repeat("[", 300), canon.ReasonDepth)
	wantRefused(t, strings.Repeat("[", 300)+"\xff", canon.ReasonDepth)

	// Brackets inside strings, including after escaped quotes, are text.
	wantAccepted(t, `["`+strings.Repeat("[{", 1000)+`"]`)
	wantAccepted(t, `["\"`+strings.Repeat("[", 1000)+`\\"]`)
	wantAccepted(t, `{"`+strings.Repeat("[", 1000)+`":"`+strings.Repeat("{", 1000)+`"}`)

	// Depth counts nesting, not the number of containers.
	wantAccepted(t, "["+strings.Repeat("[[]],", 10000)+"[]]")
}

// Numbers are refused when their literal is too long or their exponent, as
// written or as implied by their digits, is past the bound.
func TestCheckJSON_RefusesNumbersPastTheBound(t *testing.T) {
	digits := func(n int) string { return "1" + strings.Repeat("0", n-1) }
	refused := []struct{ in, reason string }{
		{`1e-10000000`, canon.ReasonNumberExponent},
		{`0.1e-9223372036854775808`, canon.ReasonNumberExponent},
		{`1e+9999999999999999999`, canon.ReasonNumberExponent},
		{`1e99999999999999999999999999999999999999`, canon.ReasonNumberExponent},
		{`-1E-99999999999999999999999999999999999999`, canon.ReasonNumberExponent},
		{`1e0000000000000000000000010001`, canon.ReasonNumberExponent},
		{`1e10001`, canon.ReasonNumberExponent},
		{`1e-10001`, canon.ReasonNumberExponent},
		{`10e10000`, canon.ReasonNumberExponent},
		{`0.01e-9999`, canon.ReasonNumberExponent},
		{digits(9000) + `e5000`, canon.ReasonNumberExponent},
		{`0.` + strings.Repeat("0", 9000) + `1e-5000`, canon.ReasonNumberExponent},
		{digits(10001), canon.ReasonNumberLength},
		{`-` + digits(10000), canon.ReasonNumberLength},
		{`0.` + strings.Repeat("0", 9999), canon.ReasonNumberLength},
		{`{"n":[1,{"m":1e-10000000}]}`, canon.ReasonNumberExponent},
		{`[1e10001,` + digits(10001) + `]`, canon.ReasonNumberExponent},
	}
	for _, c := range refused {
		wantRefused(t, c.in, c.reason)
	}

	for _, in := range []string{
		`1e10000`,
		`1e-10000`,
		`-1E+10000`,
		`1e00000000000000000000000001`,
		`1e0000000000000000000000010000`,
		`0e-10000`,
		`0.000e10000`,
		`-0.0e-10000`,
		`0.1e-9999`,
		`9.999e10000`,
		digits(10000),
		`-` + digits(9999),
		digits(5000) + `e5000`,
		`0.` + strings.Repeat("0", 4999) + `1e-5000`,
		`0.` + strings.Repeat("0", 9998),
	} {
		wantAccepted(t, in)
		if got, _ := canon.Canonical([]byte(in)); string(got) != in {
			t.Errorf("Canonical(%.60s) changed the literal to %.60s", in, got)
		}
	}
}

// The reason is carried in a field, matches ErrInvalid, and reads as one
// sentence.
func TestError_CarriesTheReasonAndMatchesErrInvalid(t *testing.T) {
	err := canon.Check([]byte(`{"a":1,"a":2}`))
	if got, want := err.Error(), "JSON refused: duplicate key"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, canon.ErrInvalid) {
		t.Error("errors.Is(err, ErrInvalid) = false")
	}
	if errors.Is(errors.New("JSON refused"), canon.ErrInvalid) {
		t.Error("an unrelated error matches ErrInvalid")
	}
	if err := canon.Check([]byte(`{"a":1}`)); err != nil {
		t.Errorf("Check of a valid document after a refusal = %v", err)
	}
}
