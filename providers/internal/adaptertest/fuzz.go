package adaptertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
)

// FuzzDecode is every adapter's decode fuzz target: whatever a server
// sends, decode neither panics nor repeats the key, unusable usage is
// charged nothing, and a success never carries tool uses out of a cut-off
// or refused reply nor usage that cannot be.
func FuzzDecode(f *testing.F, decode func(body []byte, key string) (agentrt.ModelResponse, error), seeds []string) {
	for _, seed := range seeds {
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
