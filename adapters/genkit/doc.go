// Package genkit puts agents written with Firebase Genkit for Go
// (github.com/firebase/genkit/go) under an agentrt Gate.
//
// Genkit's Generate runs every tool request of a model turn through the
// WrapTool hooks of the middleware given with ai.WithUse. A hook sees the
// resolved tool and the request (name, call ref, input); returning a
// response without calling next skips the tool and hands that output to the
// model, and ai.NewToolInterruptError stops the loop with an interrupt. That
// hook is the seam this module governs: the adapter itself is built on the
// Gate's API for loops agentrt does not own, and this package holds, for now,
// the tests that pin the framework behaviour it relies on.
//
// This is a nested module so that Genkit and its dependencies never enter
// the core's build; it pins Genkit v1.13.1.
package genkit
