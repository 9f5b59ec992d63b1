// Package eino puts agents written with CloudWeGo Eino
// (github.com/cloudwego/eino) under an agentrt Gate.
//
// Tools derives the Gate's specs from Eino tools (registered by spec only),
// and Middleware is a compose.ToolMiddleware for any ToolsNodeConfig, an
// adk.ChatModelAgent's included. Each call goes to Gate.Reply; an allowed
// call runs the Eino tool through OpenStep.ExecuteFunc, so it is recorded
// as started before it runs and runs at most once; a denial is a substitute result the model reads (a
// middleware error would fail Eino's whole run); a pending approval waits
// in Gate.Await or, with Options.Interrupt, raises compose.StatefulInterrupt.
// On a resume only the recorded grant counts, never the resume data.
// Handler, in an adk.ChatModelAgent's Handlers, announces each model
// response's calls (Gate.Turn), so a call that needs approval waits alone
// while its allowed siblings run.
//
// The run id is the Eino checkpoint id: RunOptions sets both
// adk.WithCheckPointID and the session value (RunKey) the middleware
// reads; pass them to Runner.Run and Runner.Resume. A compose graph run
// without a Runner names its run with WithRunID.
//
// This is a nested module so that Eino and its dependencies never enter the
// core's build; it pins Eino v0.9.13. docs/adapters.md has the quickstart.
package eino
