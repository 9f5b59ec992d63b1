// Package upstreamtest holds upstream MCP servers that the proxy's tests
// in several packages start. Only tests import it.
package upstreamtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// PromptOnly starts a streamable-HTTP server named "bare" that offers no
// tool and one prompt, "greet", and returns its endpoint. It stops when
// the test ends.
func PromptOnly(t testing.TB) string {
	up := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	up.AddPrompt(&sdk.Prompt{Name: "greet", Description: "Says hello."},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello"}}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}
