package disclosure_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
)

// An image an MCP server returns as base64 data passes the default rules
// untouched: a high-entropy run longer than 1 KiB is a payload, not a
// credential. A short high-entropy token beside it is still redacted.
func TestRules_Base64PayloadIsNotAHighEntropySecret(t *testing.T) {
	raw := make([]byte, 3000)
	for i := range raw {
		raw[i] = byte(i*7919 + i*i*31 + i>>3) // varied bytes, like compressed image data
	}
	data := base64.StdEncoding.EncodeToString(raw)
	token := "8fK2mQ7xL0pR8vT4" + "wZ6yB1nC5dE9hJ3sU"
	c, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": data}},
		"note": "API_SECRET=" + token})
	out, err := rules(t, disclosure.Default()).Disclose(context.Background(), agentrt.DisclosureInput{
		Tool: agentrt.ToolSpec{Name: "shot"}, Kind: agentrt.ObsToolResult, Content: c})
	if err != nil || out.Blocked {
		t.Fatalf("disclose: %v, blocked %v", err, out.Blocked)
	}
	if !strings.Contains(string(out.Content), data) {
		t.Errorf("the image data was changed: findings %+v", out.Findings)
	}
	if strings.Contains(string(out.Content), token) {
		t.Errorf("the short token beside it was not redacted: %s", out.Content)
	}
}
