package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
)

// MaxFieldBytes is the longest string a read model carries whole. A longer
// one is shown by its first HeadBytes and last TailBytes.
const MaxFieldBytes = 2000

// How much of a string over MaxFieldBytes is kept. Together with the marker
// they stay well under MaxFieldBytes, so a bounded string is never bounded
// again.
const (
	HeadBytes = 600
	TailBytes = 400
)

// Cut splits s for display when it is longer than MaxFieldBytes: the head
// and tail kept, cut on rune boundaries, and how many bytes lie between
// them. cut is false, and head is s, when s fits.
//
// Surfaces that can write a marker the text cannot forge (a terminal
// renderer, after escaping both halves) put their own between head and
// tail; BoundString puts a plain one.
func Cut(s string) (head, tail string, omitted int, cut bool) {
	if len(s) <= MaxFieldBytes {
		return s, "", 0, false
	}
	h := runeStartAtOrBefore(s, HeadBytes)
	t := runeStartAtOrAfter(s, len(s)-TailBytes)
	return s[:h], s[t:], t - h, true
}

// BoundString returns s when it fits in MaxFieldBytes, and otherwise its
// head and tail around "…[N bytes omitted]…".
func BoundString(s string) string {
	head, tail, omitted, cut := Cut(s)
	if !cut {
		return s
	}
	return fmt.Sprintf("%s…[%d bytes omitted]…%s", head, omitted, tail)
}

// runeStartAtOrBefore returns the largest i <= n at which a rune of s
// starts (n < len(s)). Stray continuation bytes count as runes of their own
// after three steps back, as a range loop would treat them.
func runeStartAtOrBefore(s string, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

// runeStartAtOrAfter returns the smallest i >= n at which a rune of s
// starts, or len(s).
func runeStartAtOrAfter(s string, n int) int {
	for i := n; i < len(s) && i < n+utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	if n+utf8.UTFMax < len(s) {
		return n + utf8.UTFMax
	}
	return len(s)
}

// BoundValue returns v with every string in it, map keys included, bounded
// by BoundString. It walks the shapes encoding/json decodes into (maps of
// string to any, slices of any); anything else is returned as is. v is not
// changed.
func BoundValue(v any) any {
	switch x := v.(type) {
	case string:
		return BoundString(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = BoundValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range keys {
			bk := BoundString(k)
			// Two long keys can share a head, a tail and a length; keep
			// both rather than let one replace the other.
			for n := 2; ; n++ {
				if _, dup := out[bk]; !dup {
					break
				}
				bk = fmt.Sprintf("%s #%d", BoundString(k), n)
			}
			out[bk] = BoundValue(x[k])
		}
		return out
	}
	return v
}

// BoundRaw bounds every string in a JSON value. A value no longer than
// MaxFieldBytes is returned as is, bytes unchanged. A longer one is decoded
// (numbers kept as written), bounded, and encoded again with its keys
// sorted. Bytes that are not one JSON value are returned as a JSON string
// of their bounded text, so the result is always JSON (or empty when raw
// is).
func BoundRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) <= MaxFieldBytes {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return encode(BoundString(string(raw)))
	}
	if _, err := dec.Token(); err != io.EOF {
		// Trailing data after the value.
		return encode(BoundString(string(raw)))
	}
	return encode(BoundValue(v))
}

func encode(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only values decoded from JSON or strings reach here; they encode.
		return json.RawMessage(`null`)
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// BoundApproval returns a with its capability, presentation, arguments,
// tool description and input schema, and its free text fields (kind, note,
// decided_by, decode_error) bounded, and each argument its presentation
// lists as a secret shown as [REDACTED:<kind>] (agentrt.ApprovalArguments). Ids and Hash are never changed: the
// hash still names the approval as stored, so a decision made on a bounded
// copy binds the whole request, which the operator was shown head and tail
// of.
func BoundApproval(a agentrt.Approval) agentrt.Approval {
	// Every surface that encodes an approval (show -json, approve -json,
	// the webhook's JSON, the console) passes here: the secrets the
	// presentation lists are redacted before the arguments are bounded.
	args, _ := agentrt.ApprovalArguments(a)
	a.Kind = BoundString(a.Kind)
	a.Capability = BoundRaw(a.Capability)
	a.Presentation = BoundRaw(a.Presentation)
	a.Request.Args = BoundRaw(args)
	a.Request.Spec.Name = BoundString(a.Request.Spec.Name)
	a.Request.Spec.Description = BoundString(a.Request.Spec.Description)
	a.Request.Spec.InputSchema = BoundRaw(a.Request.Spec.InputSchema)
	a.Note = BoundString(a.Note)
	a.DecidedBy = BoundString(a.DecidedBy)
	a.DecodeError = BoundString(a.DecodeError)
	return a
}

// ValueSize is the one size a person is shown for a JSON value, in the
// CLI and the console alike: a string's decoded bytes (what the tool
// receives, without the quotes and escapes of its JSON text), any other
// value's compact JSON text. A value that is not JSON counts as its bytes.
func ValueSize(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return len(s)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return len(raw)
	}
	return buf.Len()
}
