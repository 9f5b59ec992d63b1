// Package eino puts agents written with CloudWeGo Eino
// (github.com/cloudwego/eino) under an agentrt Gate.
//
// Eino's ToolsNode runs every tool call through the
// compose.ToolMiddleware chain of its ToolsNodeConfig (which a ChatModelAgent
// takes in its ToolsConfig). An invokable middleware sees the tool name, the
// call id and the JSON arguments; returning a ToolOutput without calling the
// next endpoint skips the tool and hands that text to the model. That
// middleware is the seam this module governs: the adapter itself is built on
// the Gate's API for loops agentrt does not own, and this package holds, for
// now, the tests that pin the framework behaviour it relies on.
//
// This is a nested module so that Eino and its dependencies never enter the
// core's build; it pins Eino v0.9.13.
package eino
