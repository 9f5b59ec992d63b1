package canon_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/internal/canon"
)

// DecodeStrict takes one value with known fields and refuses the rest,
// including a closing bracket that json.Decoder.More would let pass.
func TestDecodeStrict_RefusesUnknownFieldsAndTrailingData(t *testing.T) {
	type doc struct {
		A int `json:"a"`
	}
	var d doc
	if err := canon.DecodeStrict([]byte(" {\"a\": 1}\n"), &d); err != nil || d.A != 1 {
		t.Fatalf("a plain object: %+v %v", d, err)
	}
	for name, in := range map[string]string{
		"another value":   `{"a":1} {}`,
		"a stray bracket": `{"a":1} ]`,
		"a stray brace":   `{"a":1}}`,
	} {
		if err := canon.DecodeStrict([]byte(in), &doc{}); !errors.Is(err, canon.ErrTrailingData) {
			t.Errorf("%s: %v, want ErrTrailingData", name, err)
		}
	}
	if err := canon.DecodeStrict([]byte(`{"a":1,"b":2}`), &doc{}); err == nil {
		t.Error("an unknown field was accepted")
	}
	if err := canon.DecodeStrict([]byte(`{"a":`), &doc{}); err == nil {
		t.Error("a cut-off object was accepted")
	}
}
