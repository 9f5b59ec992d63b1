package providers

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// testReply is a reply format for TestReplyFormat_Decode: counts in a
// "usage" object, an error member, and a text Map refuses when it is
// "refuse".
type testReply struct {
	Text  string          `json:"text"`
	Stop  string          `json:"stop"`
	Error json.RawMessage `json:"error"`
}

var testFormat = ReplyFormat[UsageMember, testReply]{
	Provider: "openai", Object: "chat completion",
	Counts: InUsageMember(func(w *struct {
		In json.RawMessage `json:"in"`
	}, c *Counts) agentrt.Usage {
		return agentrt.Usage{InputTokens: c.Read("usage.in", w.In)}
	}),
	ErrorMember: func(w *testReply) json.RawMessage { return w.Error },
	Map: func(w *testReply, r Reply) (agentrt.ModelResponse, error) {
		if w.Text == "refuse" {
			return agentrt.ModelResponse{}, r.Refuse("the text says refuse", nil)
		}
		return agentrt.ModelResponse{Text: w.Text, StopReason: w.Stop, ToolUses: []agentrt.ToolUse{ToolCall(0, "c1", "t", nil)}}, nil
	},
}

// A served reply of the wrong shape, with an error member, or refused by
// Map is charged the usage already read, the key kept out; a body that is
// not JSON or has a bad count is charged nothing; a good one gets its
// usage and a copy of the body, and a cut-off one loses its tool calls.
func TestReplyFormat_DecodeRefusesAWrongShapeOrAnErrorMemberChargingTheUsage(t *testing.T) {
	const key = "sk-secret-0123456789"
	charged := map[string]string{
		`{"text":7,"usage":{"in":9}}`:                                           "does not have the chat completion shape",
		`{"error":{"message":"bad key sk-secret-0123456789"},"usage":{"in":9}}`: "holds an error: {\"message\":\"bad key [redacted]\"}",
		`{"text":"refuse","usage":{"in":9}}`:                                    "the text says refuse",
	}
	for body, want := range charged {
		_, err := testFormat.Decode([]byte(body), key)
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage.InputTokens != 9 || !errors.Is(err, ErrUnusableReply) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a ServedError charging 9 input tokens saying %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error carries the key: %v", body, err)
		}
	}
	for body, want := range map[string]string{`not json`: "is not a chat completion object", `{"usage":{"in":-1}}`: "usage.in", `{"usage":[]}`: "not a usage object"} {
		_, err := testFormat.Decode([]byte(body), key)
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a ServedError charging nothing saying %q", body, err, want)
		}
	}
	body := []byte(`{"text":"hi","error":null,"usage":{"in":9}}`)
	resp, err := testFormat.Decode(body, key)
	if err != nil || resp.Text != "hi" || resp.Usage.InputTokens != 9 || string(resp.Raw) != string(body) || len(resp.ToolUses) != 1 {
		t.Fatalf("Decode = %+v, %v", resp, err)
	}
	body[1] = 'X'
	if resp.Raw[1] == 'X' {
		t.Error("Raw shares the caller's buffer")
	}
	if resp, err := testFormat.Decode([]byte(`{"text":"hi","stop":"max_tokens"}`), key); err != nil || resp.ToolUses != nil {
		t.Errorf("a cut-off reply: %+v, %v; want no tool uses", resp, err)
	}
}
