// Package disclosure is an agentrt.Disclosure that keeps secrets and
// undeclared fields out of what a tool's outcome discloses: to the model,
// to the host that called a Gate, and to the run's record.
//
// Two kinds of rule apply, in this order, to every outcome the engine
// hands it:
//
//   - Output rules, per tool, judge the structure of a result's JSON: an
//     allow-list of JSON pointers ("*" stands for any array index), pointers
//     never to be exported (their presence withholds the result), and what
//     becomes of a field outside the allow-list (removed, or the call becomes
//     a tool error).
//   - Secret rules find known secret formats in every string leaf of the
//     JSON, in the summary, the failure message and the text blocks, and
//     replace each finding in place by [REDACTED:<rule>], or withhold the
//     result when the operator says that rule blocks.
//
// Detection is github.com/DefangLabs/secret-detector's detectors, run in
// memory with no network (docs/decisions/0014-secret-detection.md says
// why that library), plus two rules of ours for formats it does not know:
// Google API keys and opaque bearer tokens. A rule can be turned off for a
// named tool; Describe says which, for the run's record.
//
// It is a nested module, so the core keeps its three dependencies.
package disclosure
