// Package eventdoc generates the event catalogue's reference from its Go
// types: docs/events.md and a JSON Schema (2020-12) per event type under
// docs/events/. The payload types in the root package are the format;
// these files are their description, and a test fails when they drift.
//
// Field descriptions are the fields' doc comments, read from the root
// package's source. A field tagged audit:"content" (and every field inside
// one) is content, and one tagged audit:"digest" an unkeyed hash of
// content: erasure removes both. Schemas mark them with the annotations
// "x-agentrt-content" and "x-agentrt-content-digest".
package eventdoc
