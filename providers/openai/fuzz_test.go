package openai

import (
	"testing"

	"github.com/agentrt/agentrt/providers/internal/adaptertest"
)

// Whatever a server sends, replies.Decode neither panics nor repeats the key, and a
// success never carries tool uses out of a cut-off or refused reply.
func FuzzDecode_NeverPanics(f *testing.F) { adaptertest.FuzzDecode(f, replies.Decode, decodeSeeds) }

var decodeSeeds = []string{
	completion(`{"role":"assistant","content":"hi"}`, "stop", okUsage),
	completion(`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{\"a\":1}"}}]}`, "length", okUsage),
	`{"choices":[{"message":{"content":[{"type":"text","text":"a"}],"refusal":"no"},"finish_reason":"stop"}]}`,
	`{"error":{"message":"sk-fuzz-key"}}`,
	`null`, `[]`, `{"usage":{"prompt_tokens":1e400}}`,
}
