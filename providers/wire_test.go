package providers

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// A served body of the wrong shape, or one carrying an error member, is
// refused charging the usage already read, with the key kept out; a bad
// count or a body that is not JSON charges nothing; a body whose error
// member is null or absent is read into w with its usage.
func TestReplyFormat_DecodeRefusesAWrongShapeOrAnErrorMemberChargingTheUsage(t *testing.T) {
	type reply struct {
		Text  string          `json:"text"`
		Error json.RawMessage `json:"error"`
	}
	type usage struct {
		In json.RawMessage `json:"in"`
	}
	format := ReplyFormat[UsageMember]{Provider: "openai", Object: "chat completion",
		Counts: InUsageMember(func(w *usage, c *Counts) agentrt.Usage { return agentrt.Usage{InputTokens: c.Read("usage.in", w.In)} })}
	const key = "sk-secret-0123456789"
	charged := map[string]string{
		`{"text":7,"usage":{"in":9}}`:                                           "does not have the chat completion shape",
		`{"error":{"message":"bad key sk-secret-0123456789"},"usage":{"in":9}}`: "holds an error: {\"message\":\"bad key [redacted]\"}",
	}
	for body, want := range charged {
		var w reply
		_, err := format.Decode([]byte(body), key, &w, &w.Error)
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage.InputTokens != 9 || !errors.Is(err, ErrUnusableReply) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a ServedError charging 9 input tokens saying %q", body, err, want)
			continue
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error carries the key: %v", body, err)
		}
	}
	for body, want := range map[string]string{`not json`: "is not a chat completion object", `{"usage":{"in":-1}}`: "usage.in", `{"usage":[]}`: "not a usage object"} {
		var w reply
		_, err := format.Decode([]byte(body), key, &w, &w.Error)
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != (agentrt.Usage{}) || !errors.Is(err, agentrt.ErrUnusableUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a ServedError charging nothing saying %q", body, err, want)
		}
	}
	for _, body := range []string{`{"text":"hi","error":null,"usage":{"in":9}}`, `{"text":"hi","usage":{"in":9}}`} {
		var w reply
		if u, err := format.Decode([]byte(body), key, &w, &w.Error); err != nil || w.Text != "hi" || u.InputTokens != 9 {
			t.Errorf("%s: %+v, %v, text %q", body, u, err, w.Text)
		}
	}
}
