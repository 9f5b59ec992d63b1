package ollama

import (
	"testing"

	"github.com/agentrt/agentrt/providers/internal/adaptertest"
)

// Whatever a server sends, replies.Decode neither panics nor repeats the key, and a
// success never carries tool uses out of a cut-off or refused reply.
func FuzzDecode_NeverPanics(f *testing.F) { adaptertest.FuzzDecode(f, replies.Decode, decodeSeeds) }

var decodeSeeds = []string{
	chat(`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"x","arguments":{"a":1}}}]}`, "length", okCounts),
	chat(`{"role":"assistant","content":"hi"}`, "stop", okCounts),
	`{"error":"sk-fuzz-key"}`, `null`, `{"message":null}`, `{"prompt_eval_count":-0}`,
}
