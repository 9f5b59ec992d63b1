// Package eventdoc generates the event catalogue's reference from its Go
// types: docs/events.md and a JSON Schema (2020-12) per event type under
// docs/events/. The payload types in the root package are the format;
// these files are their description, and a test fails when they drift.
//
// Field descriptions are the fields' doc comments, read from the root
// package's source. A field tagged audit:"content" (and every field inside
// one) is content: erasure removes it. Schemas mark it with the annotation
// "x-agentrt-content": true.
package eventdoc
