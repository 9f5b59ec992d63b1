// Package otel turns agentrt events into OpenTelemetry traces.
//
// It is a nested module, so the core keeps none of the OpenTelemetry SDK's
// dependencies. Pair it with export.Follower: the Exporter's Sink maps each
// event as it is delivered.
//
// One trace per run, with spans for the run, each step, each model attempt
// (named and attributed as the GenAI semantic conventions say: "chat", with
// gen_ai.*), each tool execution ("execute_tool", with gen_ai.tool.*), each
// approval wait, and each tool that finished after its run had ended. The
// other events become span events. Trace and span ids are derived from run
// and record ids (IDGenerator), so restarts, replays and re-exports produce
// the same trace, and a run taken over by another process after a crash
// continues its trace.
//
// Text a model chose (goals, reasons, arguments, messages, a provider's
// error) is cut at MaxText on a rune boundary with a marker and never
// becomes a span name. What remains still leaves the machine for the
// collector the operator configured; docs/export.md lists every attribute.
//
// Provider builds a TracerProvider from the standard OTEL_* variables.
// cmd/agentrt-otel is a ready program: it follows a database and exports
// to the endpoint in OTEL_EXPORTER_OTLP_ENDPOINT.
package otel
