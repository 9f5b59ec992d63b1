// Package export streams the event log out of a runs database, in commit
// order, resumably.
//
// A Follower reads pages of events after the seq its Cursor holds, hands
// each to a Sink, and saves the cursor after each page and again when it
// stops. Across clean stops (a cancelled context, Once, a sink error) every
// event is delivered exactly once. After a hard kill the next Follow
// re-delivers at most the one page that was in flight, and loses nothing.
//
// A Follower only reads. Give it a store opened read-only
// (sqlite.OpenExisting(path, true)); it never writes to the database, so it
// can run beside the agents that own it, as another account if need be.
//
// Head names the last delivered event and its stored chain hash. Kept where
// the database's writers cannot reach, it lets agentrt verify -head
// SEQ:HASH show later that the record up to it was not rewritten or cut.
//
// The OpenTelemetry exporter, which maps these events to spans, is the
// nested module export/otel, so the core stays free of its dependencies.
package export
