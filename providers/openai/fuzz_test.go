package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// Whatever a server sends, decode neither panics nor repeats the key, and a
// success never carries tool uses out of a cut-off or refused reply.
func FuzzDecode_NeverPanics(f *testing.F) {
	for _, seed := range decodeSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := decode(data, "sk-fuzz-key")
		if err != nil {
			if strings.Contains(err.Error(), "sk-fuzz-key") {
				t.Fatalf("error repeats the key: %v", err)
			}
			var sv *agentrt.ServedError
			if errors.As(err, &sv) && errors.Is(err, agentrt.ErrUnusableUsage) && sv.Usage != (agentrt.Usage{}) {
				t.Fatalf("unusable usage charged %+v", sv.Usage)
			}
			return
		}
		if (resp.StopReason == agentrt.StopMaxTokens || resp.StopReason == agentrt.StopRefusal) && len(resp.ToolUses) > 0 {
			t.Fatalf("a %s reply carries tool uses", resp.StopReason)
		}
		if resp.Usage.InputTokens < 0 || resp.Usage.OutputTokens < 0 || resp.Usage.CachedInputTokens > resp.Usage.InputTokens {
			t.Fatalf("usage %+v passed", resp.Usage)
		}
	})
}

var decodeSeeds = []string{
	completion(`{"role":"assistant","content":"hi"}`, "stop", okUsage),
	completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{\"a\":1}"}}]}`, "length", okUsage),
	`{"choices":[{"message":{"content":[{"type":"text","text":"a"}],"refusal":"no"},"finish_reason":"stop"}]}`,
	`{"error":{"message":"sk-fuzz-key"}}`,
	`null`, `[]`, `{"usage":{"prompt_tokens":1e400}}`,
}
