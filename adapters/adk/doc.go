// Package adk puts agents written with Google's Agent Development Kit for Go
// (google.golang.org/adk/v2) under an agentrt Gate.
//
// ADK runs every tool call of a model turn through the agent's
// llmagent.Config.BeforeToolCallbacks before the tool's Run method. A
// callback sees the tool, the call's arguments and an agent.Context that
// carries the call id (FunctionCallID), the invocation id (InvocationID) and
// the session id; returning a non-nil result skips the tool and hands that
// result to the model, returning an error hands the model {"error": text}.
// That callback is the seam this module governs: the adapter itself is
// built on the Gate's API for loops agentrt does not own, and this package
// holds, for now, the tests that pin the framework behaviour it relies on.
//
// This is a nested module so that ADK and its dependencies never enter the
// core's build; it pins ADK v2.2.0.
package adk
