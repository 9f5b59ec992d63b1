// Package mcp loads the tools of a Model Context Protocol server as
// agentrt tools, under the operator's classification and a pin of what the
// server presented when it was reviewed.
//
// The server is untrusted: it classifies nothing. A tool registers only when
// the operator has written a [Rule] naming its side-effect class, and only
// while the server still presents exactly the input schema, description and
// output schema recorded by [Pin] in a [Manifest]. The pin is taken from the
// raw tools/list bytes the server sent, captured below the SDK, because the
// SDK's typed Tool drops fields it does not know and re-encodes numbers.
// Annotations may refuse a registration and never relax one.
//
// A schema may not reach outside itself: an outside $ref, $dynamicRef, $id
// or $schema anywhere in the document refuses the tool. Parameters the
// operator denies or fixes are removed from the schema the model sees and
// refused at call.
//
// A server cannot hang or flood the client: [Server.ConnectTimeout] bounds
// connecting, initializing, listing and every check [Load] makes; listings
// are bounded in pages and tools; HTTP follows no redirect and bodies are
// capped; results are capped at [Server.MaxContentBytes]. A stdio server
// runs with a minimal environment in its own process group, which Close
// kills whole.
//
// Beyond the pin at Load, a [Connection] re-lists when the server announces
// notifications/tools/list_changed, and refuses every later call to a tool
// that no longer matches its pin. A result whose structured content fails
// the pinned output schema is a tool error, never a result.
//
// What the pin does not cover: what a server does when called, and what a
// stdio server can reach. It runs as the operator, with the operator's files
// and network. See docs/mcp.md.
//
// Beyond tools, a Connection passes on requests a surface forwards
// (resources, prompts, completion, the logging level) and hands what the
// server sends besides answers (log messages, resource updates, changes to
// its prompt and resource lists, progress of a call made under
// WithProgress) to the Server's Notifications; what
// they hold is the surface's to bound and escape. A server's requests to
// the client (sampling, elicitation, roots) are refused and reported:
// this client asks its user nothing on a server's behalf.
//
// A Connection speaks the newest revision a server offers: it sends
// server/discover at 2026-07-28 and, when the server answers with that
// revision, stays stateless (no initialize; protocol version, client
// capabilities and client info in every request's _meta; over HTTP the
// Mcp-Method, Mcp-Name and Mcp-Param headers, computed on the body as sent,
// after the operator's fixed values went in). A server that does not answer
// with it, and every server behind the legacy SSE transport, is initialized
// at 2025-11-25. A tools/list is never answered from the SDK's cache,
// whatever ttlMs the server allows: the pin checks the bytes sent now.
// A 2026-07-28 server's input_required result is refused as unreadable.
//
// Out of scope: tasks, and the server side of MCP.
package mcp
