package canon_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/canon"
)

var reasons = map[string]bool{
	canon.ReasonDepth: true, canon.ReasonUTF8: true, canon.ReasonSyntax: true,
	canon.ReasonSurrogate: true, canon.ReasonDuplicateKey: true,
	canon.ReasonNumberLength: true, canon.ReasonNumberExponent: true,
}

// Check never panics, refuses with a known reason, and whatever it accepts
// canonicalises idempotently, exactly as encoding/json would write it, with a
// stable hash and a policy form.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range goldenInputs {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		``, ` `, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `"\ud800"`, `"\udc00"`,
		`"\ud83d\ude00"`, `"\ud800\u0041"`, `"\ud800\\"`, `"\u12"`, "\"\xff\"",
		`1e-10000000`, `0.1e-9223372036854775808`, `1e+9999999999999999999`,
		`1e00000000000000000000000001`, `1e10001`, `10e10000`, `0.01e-9999`,
		`-0`, `01`, `1.`, `[1,]`, `{"a"}`, `1 2`, "\ufeff{}",
		strings.Repeat("[", 257) + strings.Repeat("]", 257),
		strings.Repeat("[", 256) + strings.Repeat("]", 256),
		`["\"[[[[["]`, `{"\u003c":"\u2028"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		err := canon.Check(in)
		if err != nil {
			var ce *canon.Error
			if !errors.As(err, &ce) || !reasons[ce.Reason] || !errors.Is(err, canon.ErrInvalid) {
				t.Fatalf("Check(%q) = %#v, want an *Error with a known reason", in, err)
			}
			if ce.Reason == canon.ReasonSyntax && json.Valid(in) {
				t.Fatalf("Check(%q) says not valid JSON; encoding/json disagrees", in)
			}
			if out, err := canon.Canonical(in); err == nil {
				t.Fatalf("Check refused %q but Canonical gave %q", in, out)
			}
			if _, err := canon.Hash(in); err == nil {
				t.Fatalf("Check refused %q but Hash accepted it", in)
			}
			_, uerr := canon.PolicyUnchecked(in)
			if (uerr == nil) != (ce.Reason == canon.ReasonDuplicateKey) {
				t.Fatalf("Check(%q) = %v but PolicyUnchecked = %v", in, err, uerr)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("Check accepted %q, which encoding/json refuses", in)
		}
		c, err := canon.Canonical(in)
		if err != nil {
			t.Fatalf("Check accepted %q but Canonical: %v", in, err)
		}
		cc, err := canon.Canonical(c)
		if err != nil || !bytes.Equal(c, cc) {
			t.Fatalf("Canonical(%q) = %q, then %q, %v", in, c, cc, err)
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("encoding/json cannot decode accepted %q: %v", in, err)
		}
		if want, err := json.Marshal(v); err != nil || !bytes.Equal(c, want) {
			t.Fatalf("Canonical(%q) = %q, encoding/json %q (%v)", in, c, want, err)
		}
		p, err := canon.Policy(in)
		if err != nil {
			t.Fatalf("Check accepted %q but Policy: %v", in, err)
		}
		if pc, err := canon.Policy(c); err != nil || !bytes.Equal(p, pc) {
			t.Fatalf("Policy(%q) = %q but Policy of its canonical form = %q, %v", in, p, pc, err)
		}
		if pu, err := canon.PolicyUnchecked(in); err != nil || !bytes.Equal(p, pu) {
			t.Fatalf("Policy(%q) = %q but PolicyUnchecked = %q, %v", in, p, pu, err)
		}
		h1, err1 := canon.Hash(in)
		h2, err2 := canon.Hash(in)
		if err1 != nil || err2 != nil || h1 != h2 || h1 != canon.HashBytes(c) {
			t.Fatalf("Hash(%q) = %s, %v then %s, %v; canonical hash %s", in, h1, err1, h2, err2, canon.HashBytes(c))
		}
	})
}
