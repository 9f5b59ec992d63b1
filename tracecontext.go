package agentrt

import (
	"context"
	"encoding/hex"
	"strings"
)

// TraceContext is the W3C trace context (traceparent and tracestate) of
// the request that began a run: a host's MCP request, an HTTP call. It is
// recorded on run.created, so an exporter can make the run's trace a
// child of the caller's. Its values are the caller's choice, so they are
// content: erasure removes them.
type TraceContext struct {
	// Parent is the traceparent value: version, trace id, parent span id
	// and flags in lowercase hex ("00-<32>-<16>-<2>").
	Parent string `json:"traceparent" audit:"content"`
	// State is the tracestate value, vendors' list members; empty when
	// there is none or it was not well formed.
	State string `json:"tracestate,omitempty" audit:"content"`
}

// Bounds of a tracestate, as W3C Trace Context sets them.
const (
	maxTraceStateBytes   = 512
	maxTraceStateMembers = 32
)

// ParseTraceContext checks a traceparent and tracestate as W3C Trace
// Context reads them. A traceparent that is not well formed (wrong
// length or case, version ff, an all-zero trace or span id) is an error,
// *ConfigError naming it; a tracestate that is not well formed, or past
// its bounds, is dropped and the traceparent kept, as the recommendation
// says a receiver does.
func ParseTraceContext(traceparent, tracestate string) (TraceContext, error) {
	if _, _, _, ok := traceIDs(traceparent); !ok {
		return TraceContext{}, &ConfigError{Field: "traceparent", Reason: "is not a W3C traceparent (version-traceid-spanid-flags in lowercase hex, ids not all zero)"}
	}
	tc := TraceContext{Parent: traceparent[:55]}
	if goodTraceState(tracestate) {
		tc.State = tracestate
	}
	return tc, nil
}

// IDs are the trace id and parent span id the traceparent names, and
// whether its sampled flag is set; ok is false for a TraceContext that
// ParseTraceContext would refuse.
func (t TraceContext) IDs() (trace [16]byte, span [8]byte, sampled, ok bool) {
	trace, span, flags, ok := traceIDs(t.Parent)
	return trace, span, flags&1 == 1, ok
}

func traceIDs(s string) (trace [16]byte, span [8]byte, flags byte, ok bool) {
	// A later version may append fields after a dash; version 00 may not.
	if len(s) < 55 || (len(s) > 55 && (s[:2] == "00" || s[55] != '-')) {
		return trace, span, 0, false
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return trace, span, 0, false
	}
	var ver, fl [1]byte
	for _, f := range []struct {
		dst []byte
		hex string
	}{{ver[:], s[0:2]}, {trace[:], s[3:35]}, {span[:], s[36:52]}, {fl[:], s[53:55]}} {
		if strings.ToLower(f.hex) != f.hex {
			return trace, span, 0, false
		}
		if _, err := hex.Decode(f.dst, []byte(f.hex)); err != nil {
			return trace, span, 0, false
		}
	}
	if trace == [16]byte{} || span == [8]byte{} {
		return trace, span, 0, false
	}
	return trace, span, fl[0], true
}

// goodTraceState is a tracestate within its bounds: printable ASCII, at
// most 512 bytes and 32 members, each member a key and a value.
func goodTraceState(s string) bool {
	if s == "" || len(s) > maxTraceStateBytes {
		return false
	}
	members := strings.Split(s, ",")
	if len(members) > maxTraceStateMembers {
		return false
	}
	for _, m := range members {
		k, v, ok := strings.Cut(strings.TrimSpace(m), "=")
		if !ok || k == "" || v == "" {
			return false
		}
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e })
}

type traceContextKey struct{}

// WithTraceContext gives ctx the trace context a run begun with it
// records (Gate.Begin, Driver.Start). Begin refuses one ParseTraceContext
// would refuse.
func WithTraceContext(ctx context.Context, tc TraceContext) context.Context {
	return context.WithValue(ctx, traceContextKey{}, tc)
}

// traceContextOf is the trace context ctx carries, checked.
func traceContextOf(ctx context.Context) (*TraceContext, error) {
	tc, ok := ctx.Value(traceContextKey{}).(TraceContext)
	if !ok {
		return nil, nil
	}
	parsed, err := ParseTraceContext(tc.Parent, tc.State)
	if err != nil {
		return nil, err
	}
	return &parsed, nil
}
