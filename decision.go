package agentrt

import "encoding/json"

// DecisionKind is what an agent decided to do.
type DecisionKind string

const (
	// KindToolCall asks the runtime to run a tool.
	KindToolCall DecisionKind = "tool_call"
	// KindComplete ends the run successfully with Result.
	KindComplete DecisionKind = "complete"
	// KindFail ends the run as failed with Message.
	KindFail DecisionKind = "fail"
	// KindTruncated is deliberately invalid: a model reply cut off by its output
	// cap. The driver records it as an invalid decision and never acts on it.
	KindTruncated DecisionKind = "truncated"
	// KindRefused is deliberately invalid: a model reply that stopped because
	// the model refused. Any tool use it carried is dropped, and the driver
	// records it as an invalid decision and never acts on it.
	KindRefused DecisionKind = "refused"
	// KindNoToolCall is deliberately invalid: a model reply with no tool use.
	KindNoToolCall DecisionKind = "no_tool_call"
)

// MaxCallIDBytes bounds Decision.CallID: a longer id is an invalid decision.
const MaxCallIDBytes = 256

// Actionable reports whether the driver can act on the kind.
func (k DecisionKind) Actionable() bool {
	return k == KindToolCall || k == KindComplete || k == KindFail
}

// Decision is one agent decision as recorded.
type Decision struct {
	Kind DecisionKind `json:"kind"`
	// CallID is the caller's own id for the call (a framework's tool-call
	// id), recorded as given; a GateSession finds a step by it
	// (StepByCallID). Empty when the caller has none. At most
	// MaxCallIDBytes bytes. A provider or a framework chooses it, so it
	// is content: erasure removes it.
	CallID string `json:"call_id,omitempty" audit:"content"`
	// Tool is the name the model chose, which need not be a tool's: it
	// is content, and a call that ran also names its tool in
	// step.tool_started.
	Tool    string          `json:"tool,omitempty" audit:"content"`
	Args    json.RawMessage `json:"args,omitempty" audit:"content"`
	Reason  string          `json:"reason,omitempty" audit:"content"`
	Result  json.RawMessage `json:"result,omitempty" audit:"content"`
	Message string          `json:"message,omitempty" audit:"content"`
	// InvalidArgs and InvalidResult keep, verbatim, arguments or a result that
	// were not acceptable JSON. They are set only by the runtime; Args and
	// Result are then empty, so nothing unusable is stored as if it were JSON.
	InvalidArgs   string `json:"invalid_args,omitempty" audit:"content"`
	InvalidResult string `json:"invalid_result,omitempty" audit:"content"`
	// InvalidBase64 says InvalidArgs/InvalidResult hold base64 of bytes that
	// were not UTF-8.
	InvalidBase64 bool `json:"invalid_base64,omitempty"`
}
