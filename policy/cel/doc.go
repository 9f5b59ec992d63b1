// Package cel is declarative policy for operators who do not write
// Go: a policy file (YAML or JSON) holds an ordered list of rules, each a
// match on tool names and side-effect classes, a CEL condition over the
// request and the run, and an outcome; the first rule that matches decides,
// and a required default decides the rest. There is no implicit allow.
//
// Load compiles a file into a *Policy, an agentrt.IdentifiedPolicy whose id
// is the hash of the file's canonical form. Every expression is compiled
// and type-checked at load; a file that does not is refused with the rule,
// line and column. Evaluation is bounded by a CEL cost limit and a bound on
// the arguments it reads; an expression that fails is a policy error, which
// ends the run, never an allow.
//
// The file format, the variables and the commands that check, test and
// explain a file (agentrt-policy, also run as agentrt policy) are described
// in docs/policy.md.
package cel
