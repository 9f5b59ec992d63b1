// Package trpcagent puts agents written with Tencent's trpc-agent-go
// (trpc.group/trpc-go/trpc-agent-go) under an agentrt Gate.
//
// trpc-agent-go runs every tool call through the agent's tool callbacks
// before the tool itself: a BeforeToolCallbackStructured that sets
// BeforeToolResult.CustomResult skips the tool and hands the model that
// result, and one that returns an error hands the model the error as the
// call's result. Govern returns that callback (and an after-model
// callback that tells it which calls a turn holds): each call is proposed
// to the gate with its ToolCallID as Decision.CallID, an allowed call
// runs the agent's own tool (tool.CallableTool.Call) through
// OpenStep.ExecuteFunc, recorded as started before it runs and run at
// most once, a denial is the error the model reads, and a call that needs
// approval waits in Gate.Await (or, with Options.Interrupt, ends at once
// with a tool error naming the approval). An error of the gate itself (a
// run that ended, a failing store) is an agent.StopError, which ends the
// framework's run. tool.PermissionPolicy is not used: the framework runs
// the tool itself once the policy allows, so the gate could not record the
// start first.
//
// The run id is RunID(app, user, session) of the invocation's session
// (agent.InvocationFromContext): one run per session, which a durable
// session service keeps across restarts. The invocation id is new for
// every runner.Run, so it is not used.
//
// This is a nested module so that trpc-agent-go and its dependencies never
// enter the core's build; it pins trpc-agent-go v1.11.2. See
// docs/adapters.md.
package trpcagent
