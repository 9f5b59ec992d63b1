// Package adk puts agents written with Google's Agent Development Kit for Go
// (google.golang.org/adk/v2) under an agentrt Gate.
//
// ADK runs every tool call of a model turn through the agent's
// llmagent.Config.BeforeToolCallbacks before the tool's Run method; a
// callback that returns a result skips the tool, and one that returns an
// error hands the model {"error": text}. Govern returns that callback (and
// an after-model callback that tells it which calls a turn holds): each call
// is proposed to the gate, an allowed call runs ADK's own tool through
// OpenStep.ExecuteFunc, a denial is the error the model reads, and a call
// that needs approval waits in Gate.Await or, with Options.Interrupt,
// raises ADK's tool confirmation. ADK's answer to a confirmation is never
// the grant: only the approval recorded in agentrt is. Specs derives the
// gate's tools from the ADK tools, by spec only.
//
// The run id is RunID(app, user, session): one run per ADK session, which a
// durable session service keeps across restarts (ADK's invocation id is new
// for every runner.Run, a resume included, so it is not used). A call's
// identity is its FunctionCallID, recorded as Decision.CallID.
//
// This is a nested module so that ADK and its dependencies never enter the
// core's build; it pins ADK v2.2.0. See docs/adapters.md.
package adk
