// Package proxy is agentrt-proxy: a stdio MCP server that an MCP host
// (Claude Desktop, Claude Code, Cursor, VS Code) starts instead of the real
// servers, and that puts every tool call it carries under agentrt's
// controls.
//
// Its scope comes first: it governs only the calls that go through it. A
// host that also gives the model a shell, file access or tools of its own
// lets the model act outside the proxy, including on the proxy's own
// database.
//
// The proxy loads each upstream server's tools with mcp.Load, so a tool is
// offered only when the operator classified it and the server still
// presents what was pinned. Each call the host makes is one agentrt run
// through a Gate: the arguments are recorded, checked against the pinned
// schema, judged by the policy (by side-effect class, or the tool's own
// outcome), executed at most once under a lease, and the outcome recorded.
// A call that needs approval waits for an operator's decision, bound by hash
// to that exact request, made with `agentrt approve` or any other front end
// on the same database.
//
// An existing setup is brought under the proxy with `agentrt-proxy init`,
// which reads a host's own configuration file, pins every server and
// writes each tool's rule as a suggestion (Suggest: the class the
// server's annotations hint at). A suggestion is not a classification:
// its tool is not offered until `agentrt-proxy review` makes it the
// operator's rule.
//
// Calls are matched by a request key, the SHA-256 of the tool's name, a NUL
// byte and agentrt.CanonicalJSON of the arguments, kept in an index of the
// proxy's own beside the database. An identical call collects the approval
// an earlier one opened, finds it in progress, or, within the repeat
// window, is told it already ran (DUPLICATE), was rejected or expired,
// instead of running or asking again. A mutating call whose outcome is
// unknown (cut off by a crash or a timeout) is never run again without an
// operator's approval, and blocks every other mutating call to its tool
// until an operator decides.
//
// A call cut off by a crash blocks its tool at once: on start, when a
// lease lapses, and before a mutating call to the tool is matched, the
// proxy takes over calls whose lease lapsed while they executed, which
// opens the operator's approval then.
//
// What the model is told starts with one status word and never names
// agentrt, the database, the configuration, a path or a run id; text a
// server, the model or an operator chose is escaped with trace.Sanitize.
// Only the proxy's own answers carry _meta[StatusMetaKey], and a server's
// text that begins with a status word is marked as the server's. A result
// that ran is returned from the record as the server sent it, its typed
// blocks (images, audio, resources, links) included.
//
// Prompts keep the servers' own names (a name two servers offer is refused
// at start unless one is renamed); resources route by the most specific
// claim; subscriptions are forwarded per host session. The proxy offers no
// tool that approves and by default asks the host nothing (no elicitation,
// no sampling); a server entry may opt in to forwarding them, each request
// a recorded run of its own. It opens no network listener unless the
// operator asks for its one opt-in exception, the loopback HTTP front
// (Front, `-listen`): loopback addresses only, a bearer token on every
// request, the Host and Origin checked against DNS rebinding, bodies and
// sessions bounded.
//
// See docs/proxy.md.
package proxy
