package providers

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// A served body of the wrong shape, or one carrying an error member, is
// refused charging the usage already read, with the key kept out; a body
// whose error member is null or absent is read into w.
func TestReplyBody_RefusesAWrongShapeOrAnErrorMemberChargingTheUsage(t *testing.T) {
	type reply struct {
		Text  string          `json:"text"`
		Error json.RawMessage `json:"error"`
	}
	const key = "sk-secret-0123456789"
	u := agentrt.Usage{InputTokens: 9, OutputTokens: 2}
	refused := map[string]string{
		`{"text":7}`: "does not have the chat completion shape",
		`{"error":{"message":"bad key sk-secret-0123456789"}}`: "holds an error: {\"message\":\"bad key [redacted]\"}",
	}
	for body, want := range refused {
		var w reply
		err := ReplyBody("openai", "chat completion", u, []byte(body), key, &w, &w.Error)
		var sv *agentrt.ServedError
		if !errors.As(err, &sv) || sv.Usage != u || !errors.Is(err, ErrUnusableReply) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a ServedError charging %+v saying %q", body, err, u, want)
			continue
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error carries the key: %v", body, err)
		}
	}
	for _, body := range []string{`{"text":"hi","error":null}`, `{"text":"hi"}`} {
		var w reply
		if err := ReplyBody("openai", "chat completion", u, []byte(body), key, &w, &w.Error); err != nil || w.Text != "hi" {
			t.Errorf("%s: %v, text %q", body, err, w.Text)
		}
	}
}
