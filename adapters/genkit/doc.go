// Package genkit puts agents written with Firebase Genkit for Go
// (github.com/firebase/genkit/go) under an agentrt Gate. Import it under
// another name (agentgenkit) beside Genkit's own genkit package.
//
// A program registers its Genkit tools with the Gate by spec (Specs), names
// the run in Genkit's action context (WithRun), and gives Generate the
// Middleware with ai.WithUse. Its WrapTool hook proposes each call, with
// Genkit's ref as the call id, and runs Genkit's own tool through
// OpenStep.ExecuteFunc when the gate allows it: recorded as started before
// it runs, at most once. A refusal is the call's output {"error": ...}, not
// a returned error, which would fail the whole Generate. A call that needs
// approval waits for the decision (Gate.Await) or, with Options.Interrupt,
// ends Generate with Genkit's tool interrupt; a restarted call runs only on
// the recorded grant, never on the restart's metadata.
//
// The run id is the action context's RunKey ("agentrt.run"), set by
// WithRun, directly or on a flow's Run. Use an id that survives a restart
// of the program: the next Generate with it attaches to the same run, and
// finds a call a crash cut off waiting for an operator.
//
// docs/adapters.md has the quickstart, what each mode guarantees and the
// traps. This is a nested module so that Genkit and its dependencies never
// enter the core's build; it pins Genkit v1.13.1.
package genkit
