package otel

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/agentrt/agentrt/export"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ProviderOptions adjust Provider. The zero value is what the environment
// says.
type ProviderOptions struct {
	// Getenv reads the variables that choose the exporter and the resource;
	// nil is os.Getenv. The OTLP exporters read their own (endpoint,
	// headers, timeout) from the process environment.
	Getenv func(string) string
	// Console is where the console exporter writes; nil is os.Stdout.
	Console io.Writer
	// Extra options for the TracerProvider, applied before the IDGenerator.
	Extra []sdktrace.TracerProviderOption
}

// Provider builds a TracerProvider from the standard variables:
//
//   - OTEL_TRACES_EXPORTER: otlp (default), console or none.
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
//     http/protobuf (default) or grpc; http/json is refused.
//   - OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _TIMEOUT and the rest, as the
//     OTLP exporters read them.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; service.name is
//     "agentrt" unless they say otherwise.
//
// Spans go through a batching processor and get their ids from
// IDGenerator. Shut the provider down to flush what is batched.
func Provider(ctx context.Context, opts ProviderOptions) (*sdktrace.TracerProvider, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("agentrt")),
		resource.WithTelemetrySDK(),
		resource.WithDetectors(envDetector{getenv}),
	)
	if err != nil {
		return nil, fmt.Errorf("otel: resource: %w", err)
	}
	tpOpts := append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res)}, opts.Extra...)
	kind := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	switch kind {
	case "", "otlp":
		proto := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
		if proto == "" {
			proto = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
		}
		var exp sdktrace.SpanExporter
		switch proto {
		case "", "http/protobuf":
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, fmt.Errorf("otel: OTLP protocol %q is not supported: use http/protobuf or grpc", proto)
		}
		if err != nil {
			return nil, fmt.Errorf("otel: OTLP exporter: %w", err)
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp, sdktrace.WithBlocking()))
	case "console":
		w := opts.Console
		if w == nil {
			w = os.Stdout
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
		if err != nil {
			return nil, fmt.Errorf("otel: console exporter: %w", err)
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp, sdktrace.WithBlocking()))
	case "none":
	default:
		return nil, fmt.Errorf("otel: OTEL_TRACES_EXPORTER=%q is not supported: use otlp, console or none", kind)
	}
	return NewTracerProvider(tpOpts...), nil
}

// envDetector is resource.WithFromEnv over a Getenv of our own, so tests
// need not touch the process environment.
type envDetector struct{ getenv func(string) string }

func (d envDetector) Detect(context.Context) (*resource.Resource, error) {
	var kv []attribute.KeyValue
	for _, part := range strings.Split(d.getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		if u, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = u
		}
		kv = append(kv, attribute.String(k, v))
	}
	if v := strings.TrimSpace(d.getenv("OTEL_SERVICE_NAME")); v != "" {
		kv = append(kv, semconv.ServiceName(v))
	}
	return resource.NewSchemaless(kv...), nil
}

// Flusher is what FlushingCursor needs of a TracerProvider.
type Flusher interface {
	ForceFlush(ctx context.Context) error
}

// FlushingCursor wraps c so that each Save first flushes the provider's
// batched spans: the cursor never moves past an ended span that has not
// been handed to the exporter, so a crash loses none (at least once, as
// the Follower promises for events). A failed flush fails the Save, which
// stops the Follower with the cursor where it was.
func FlushingCursor(ctx context.Context, c export.Cursor, f Flusher) export.Cursor {
	return flushingCursor{ctx, c, f}
}

type flushingCursor struct {
	ctx context.Context
	export.Cursor
	f Flusher
}

func (c flushingCursor) Save(seq int64) error {
	if err := c.f.ForceFlush(context.WithoutCancel(c.ctx)); err != nil {
		return fmt.Errorf("otel: flushing spans before saving the cursor: %w", err)
	}
	return c.Cursor.Save(seq)
}
