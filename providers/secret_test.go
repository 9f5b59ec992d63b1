package providers

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/providers/internal/leaktest"
)

// A Secret is Redacted in every encoding, of itself or of a struct holding
// it, and "" when it holds nothing; only Reveal returns the key, and no
// encoding decodes back into a key.
func TestSecret_EveryEncodingIsRedacted(t *testing.T) {
	const key = "sk-secret-0123456789abcdef"
	s := NewSecret(key)
	type holder struct {
		XMLName xml.Name `xml:"holder" json:"-"`
		K       Secret
		P       *Secret
		A       Secret `xml:"a,attr"`
		k       Secret
	}
	h := holder{K: s, P: &s, A: s, k: s}
	var outs []string
	for _, v := range []any{s, &s, h, &h} {
		outs = append(outs, leaktest.Encodings(t, v, "json", "xml", "template")...)
	}
	if o := leaktest.Leak(outs, key); o != "" {
		t.Fatalf("an encoding shows the key: %s", o)
	}
	if s.Reveal() != key || !s.IsSet() {
		t.Fatalf("Reveal = %q, IsSet = %t", s.Reveal(), s.IsSet())
	}
	for verb, want := range map[string]string{"%v": Redacted, "%s": Redacted, "%q": `"[redacted]"`, "%x": Redacted, "%#v": `providers.Secret("[redacted]")`} {
		if got := fmt.Sprintf(verb, s); got != want {
			t.Errorf("%s = %q, want %q", verb, got, want)
		}
	}
	j, _ := json.Marshal(h)
	x, _ := xml.Marshal(h)
	if string(j) != `{"K":"[redacted]","P":"[redacted]","A":"[redacted]"}` || !strings.Contains(string(x), `a="[redacted]"`) || !strings.Contains(string(x), "<K>[redacted]</K>") {
		t.Errorf("json %s, xml %s", j, x)
	}
	var zero Secret
	if zero.IsSet() || zero.Reveal() != "" || fmt.Sprint(zero) != "" || NewSecret("").IsSet() {
		t.Errorf("the zero Secret holds something: %q", zero.Reveal())
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(struct{ K Secret }{s}); err != nil {
		t.Fatal(err)
	}
	var back struct{ K Secret }
	if err := gob.NewDecoder(&buf).Decode(&back); err == nil || back.K.IsSet() {
		t.Errorf("a gob of a Secret decoded back into %q, %v", back.K.Reveal(), err)
	}
}
