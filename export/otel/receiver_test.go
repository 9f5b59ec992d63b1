package otel_test

import (
	"context"
	"encoding/hex"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	agentotel "github.com/agentrt/agentrt/export/otel"
	"github.com/agentrt/agentrt/internal/otlptest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP trace receiver: it decodes each protobuf
// request as a collector would and keeps the spans.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []span
	requests int
	service  []string
}

// span is a decoded span, its ids in hex.
type span struct {
	Name, TraceID, SpanID, Parent string
	Kind                          tracepb.Span_SpanKind
	Start, End                    time.Time
	Attrs                         map[string]any
	Status                        tracepb.Status_StatusCode
	StatusMessage                 string
	Events                        []string
	EventAttrs                    []map[string]any
	Scope                         string
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	r.srv = otlptest.Start(t, r.keep)
	return r
}

// keep decodes one request's body and keeps its spans and service names.
func (r *receiver) keep(b []byte) error {
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rs := range msg.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.service = append(r.service, kv.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, decode(s, ss.GetScope().GetName()))
			}
		}
	}
	return nil
}

func decode(s *tracepb.Span, scope string) span {
	d := span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
		Parent: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind, Start: time.Unix(0, int64(s.StartTimeUnixNano)).UTC(),
		End: time.Unix(0, int64(s.EndTimeUnixNano)).UTC(), Attrs: attrMap(s.Attributes), Scope: scope}
	if s.Status != nil {
		d.Status, d.StatusMessage = s.Status.Code, s.Status.Message
	}
	for _, e := range s.Events {
		d.Events = append(d.Events, e.Name)
		d.EventAttrs = append(d.EventAttrs, attrMap(e.Attributes))
	}
	return d
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var a []string
			for _, x := range v.ArrayValue.Values {
				a = append(a, x.GetStringValue())
			}
			m[kv.Key] = a
		}
	}
	return m
}

// got returns the spans received so far, in start order.
func (r *receiver) got() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]span(nil), r.spans...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].SpanID < out[j].SpanID
	})
	return out
}

// provider is otel.Provider from an environment pointing at r.
func (r *receiver) provider(t testing.TB, extra ...string) *sdktrace.TracerProvider {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.srv.URL)
	env := map[string]string{}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	tp, err := agentotel.Provider(context.Background(), agentotel.ProviderOptions{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp
}

// flush hands every ended span to the receiver.
func flush(t testing.TB, tp *sdktrace.TracerProvider) {
	t.Helper()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func byName(spans []span, name string) []span {
	var out []span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t testing.TB, spans []span, name string) span {
	t.Helper()
	s := byName(spans, name)
	if len(s) != 1 {
		var names []string
		for _, x := range spans {
			names = append(names, x.Name)
		}
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(s), name, names)
	}
	return s[0]
}
