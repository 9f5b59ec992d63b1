package otel

import (
	"context"
	"crypto/rand"
	"crypto/sha256"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span kinds, as they enter SpanID: each names the record the span stands
// for.
const (
	kindRun      = "run"
	kindStep     = "step"
	kindModel    = "model"
	kindTool     = "tool"
	kindLateTool = "tool.late"
	kindApproval = "approval"
)

// TraceID is the trace of a run: the first 16 bytes of SHA-256 over
// "agentrt/trace", a NUL byte and the run id.
func TraceID(runID string) (id trace.TraceID) {
	copy(id[:], derive(len(id), "agentrt/trace", runID))
	return id
}

// SpanID is the span of one record: the first 8 bytes of SHA-256 over
// "agentrt/span", NUL, the kind, NUL and the record's id.
func SpanID(kind, id string) (s trace.SpanID) {
	copy(s[:], derive(len(s), "agentrt/span", kind, id))
	return s
}

// derive is the first n bytes of SHA-256 over parts, a NUL byte between
// each two. n bytes of zeros, which OpenTelemetry reads as no id, get a
// last byte of 1.
func derive(n int, parts ...string) []byte {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	out := h.Sum(nil)[:n]
	for _, b := range out {
		if b != 0 {
			return out
		}
	}
	out[n-1] = 1
	return out
}

type idsKey struct{}

type wantIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// withIDs asks IDGenerator for these ids for the span started with ctx.
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, wantIDs{t, s})
}

// IDGenerator gives the Exporter's spans their derived ids, and any other
// span random ones. A TracerProvider the Exporter uses must have it
// (NewTracerProvider and Provider install it).
type IDGenerator struct{}

var _ sdktrace.IDGenerator = IDGenerator{}

// NewIDs returns the derived ids a span asked for, or random ones.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(idsKey{}).(wantIDs); ok {
		return w.trace, w.span
	}
	var t trace.TraceID
	var s trace.SpanID
	for !t.IsValid() {
		rand.Read(t[:])
	}
	for !s.IsValid() {
		rand.Read(s[:])
	}
	return t, s
}

// NewSpanID returns the derived span id a span asked for, or a random one.
func (IDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(idsKey{}).(wantIDs); ok {
		return w.span
	}
	var s trace.SpanID
	for !s.IsValid() {
		rand.Read(s[:])
	}
	return s
}

// NewTracerProvider is sdktrace.NewTracerProvider with IDGenerator.
func NewTracerProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append(opts, sdktrace.WithIDGenerator(IDGenerator{}))...)
}
