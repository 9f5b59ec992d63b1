package anthropic

import (
	"testing"

	"github.com/agentrt/agentrt/providers/internal/adaptertest"
)

// Whatever a server sends, replies.Decode neither panics nor repeats the key, and a
// success never carries tool uses out of a cut-off or refused reply.
func FuzzDecode_NeverPanics(f *testing.F) { adaptertest.FuzzDecode(f, replies.Decode, decodeSeeds) }

var decodeSeeds = []string{
	message(`[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"x","input":{"a":1}}]`, `"tool_use"`, okUsage),
	message(`[{"type":"tool_use","name":"x"}]`, `"max_tokens"`, `{"input_tokens":1,"cache_creation":{"ephemeral_1h_input_tokens":4611686018427387904}}`),
	`{"type":"error","error":{"type":"x","message":"sk-fuzz-key"}}`,
	`null`, `{"content":null,"stop_reason":7}`,
}
