package otel_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	agentotel "github.com/agentrt/agentrt/export/otel"
)

// Provider reads the standard variables: otlp over http/protobuf by
// default, to the endpoint named, with service.name agentrt unless
// OTEL_SERVICE_NAME says otherwise; grpc, console and none too; http/json
// and unknown exporters are refused.
func TestProvider_FromEnvironment(t *testing.T) {
	w := newWorld(t)
	w.twoSteps(t)
	ctx := context.Background()

	rcv := newReceiver(t)
	tp := rcv.provider(t)
	exportAll(t, w, exporter(t, w, agentotel.Config{TracerProvider: tp}), nil)
	flush(t, tp)
	if len(rcv.got()) == 0 || rcv.service[0] != "agentrt" {
		t.Fatalf("default: %d spans, service %v", len(rcv.got()), rcv.service)
	}
	rcv2 := newReceiver(t)
	tp2 := rcv2.provider(t, "OTEL_SERVICE_NAME", "billing-agents", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	exportAll(t, w, exporter(t, w, agentotel.Config{TracerProvider: tp2}), nil)
	flush(t, tp2)
	if len(rcv2.got()) == 0 || rcv2.service[0] != "billing-agents" {
		t.Fatalf("OTEL_SERVICE_NAME: service %v", rcv2.service)
	}

	var console bytes.Buffer
	tpc, err := agentotel.Provider(ctx, agentotel.ProviderOptions{Console: &console,
		Getenv: func(k string) string { return map[string]string{"OTEL_TRACES_EXPORTER": "console"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	exportAll(t, w, exporter(t, w, agentotel.Config{TracerProvider: tpc}), nil)
	tpc.Shutdown(ctx)
	if !strings.Contains(console.String(), `"Name":"agentrt.run"`) {
		t.Fatalf("console exporter wrote %.300s", console.String())
	}

	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		tp, err := agentotel.Provider(ctx, agentotel.ProviderOptions{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		tp.Shutdown(ctx)
	}
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		if _, err := agentotel.Provider(ctx, agentotel.ProviderOptions{Getenv: func(k string) string { return env[k] }}); err == nil {
			t.Fatalf("%v was accepted", env)
		}
	}
}
