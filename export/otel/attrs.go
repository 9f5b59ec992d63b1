package otel

import (
	"bytes"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
)

// attrs collects attributes, cutting every text value at MaxText.
type attrs struct {
	max int
	kv  []attribute.KeyValue
}

func (a *attrs) str(k, v string) {
	if v != "" {
		a.kv = append(a.kv, attribute.String(k, truncate(v, a.max)))
	}
}

// json adds a JSON value as compact text; a JSON string as its text.
func (a *attrs) json(k string, v json.RawMessage) {
	if len(v) == 0 {
		return
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		a.str(k, s)
		return
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		a.str(k, b.String())
		return
	}
	a.str(k, string(v))
}

// value adds a decoded value as compact JSON text.
func (a *attrs) value(k string, v any) {
	if b, err := json.Marshal(v); err == nil && string(b) != "null" {
		a.str(k, string(b))
	}
}

func (a *attrs) int(k string, v int64) { a.kv = append(a.kv, attribute.Int64(k, v)) }

func (a *attrs) bool(k string, v bool) {
	if v {
		a.kv = append(a.kv, attribute.Bool(k, true))
	}
}

func (a *attrs) add(kv ...attribute.KeyValue) { a.kv = append(a.kv, kv...) }
