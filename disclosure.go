package agentrt

import (
	"context"
	"encoding/json"
)

// Disclosure judges what of a tool's outcome may be recorded and shown to
// the model or the host. The engine calls it on every observation a tool
// call produces (results, tool errors, unreadable content), after the tool
// returns and before anything is recorded or handed on, so the Driver, a
// Gate and a Worker all apply the same rules. An implementation may only
// remove or redact: the engine refuses an outcome that adds anything the
// tool did not return (see narrows), and withholds the result instead.
//
// The nested module github.com/agentrt/agentrt/disclosure provides one that
// redacts known secret formats and applies structured output rules.
type Disclosure interface {
	Disclose(ctx context.Context, in DisclosureInput) (DisclosureOutcome, error)
}

// DisclosureFunc adapts a function to Disclosure.
type DisclosureFunc func(ctx context.Context, in DisclosureInput) (DisclosureOutcome, error)

// Disclose calls f.
func (f DisclosureFunc) Disclose(ctx context.Context, in DisclosureInput) (DisclosureOutcome, error) {
	return f(ctx, in)
}

// DisclosureInput is one tool outcome as the tool produced it.
type DisclosureInput struct {
	RunID, StepID string
	// Tool is the tool's spec; rules are chosen by its name.
	Tool ToolSpec
	// Kind is the observation's kind: a result, or one of the failures
	// whose content the runtime wrote around the tool's error text.
	Kind ObservationKind
	// Content is the observation's JSON (the tool's content for a
	// result). It is not JSON only when a tool returned bytes that are not.
	Content json.RawMessage
	// Summary, FailureMessage and the text of Blocks are text the model
	// or the host may read.
	Summary        string
	FailureMessage string
	Blocks         []ResultBlock
}

// DisclosureOutcome is what may be recorded and shown of one outcome.
// Each of Content, Summary, FailureMessage and Blocks is what remains of
// the input's; an implementation that changes nothing returns them as it
// got them. Blocked withholds the whole outcome: the call becomes a tool
// error naming the rules, and nothing of the content is kept.
type DisclosureOutcome struct {
	Content        json.RawMessage
	Summary        string
	FailureMessage string
	Blocks         []ResultBlock
	Findings       []DisclosureFinding
	Blocked        bool
}

// DisclosureAction is what a rule did at one place.
type DisclosureAction string

const (
	// DisclosureRedacted: a value was replaced in place by [REDACTED:<rule>].
	DisclosureRedacted DisclosureAction = "redacted"
	// DisclosureRemoved: a field was removed (outside an allow-list, or
	// never to be exported).
	DisclosureRemoved DisclosureAction = "removed"
	// DisclosureBlocked: the finding withheld the whole outcome.
	DisclosureBlocked DisclosureAction = "blocked"
)

// Valid reports whether a is one of the actions.
func (a DisclosureAction) Valid() bool {
	switch a {
	case DisclosureRedacted, DisclosureRemoved, DisclosureBlocked:
		return true
	}
	return false
}

// DisclosureFinding is one thing a rule found. Value is what was found:
// the engine records only its digest keyed by the run's salt, never the
// value.
type DisclosureFinding struct {
	// Rule names the rule ("aws_access_key", "allow_list").
	Rule string
	// Pointer is where: a JSON pointer into Content ("/items/0/token"),
	// or "#summary", "#failure_message", "#blocks/<i>/text".
	Pointer string
	Action  DisclosureAction
	Value   string
}

// DisclosureMarker is what a redacted value is replaced by.
func DisclosureMarker(rule string) string { return "[REDACTED:" + rule + "]" }

// KeyedDigester is an optional capability of a Tx: a digest of a value
// under the run's secret salt, which no one without the salt can compute
// for a guess, and which erasure makes unconfirmable by deleting the salt.
// Without it, disclosure.applied records no digests.
type KeyedDigester interface {
	KeyedDigest(runID string, value []byte) (string, error)
}
