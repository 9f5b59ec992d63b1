package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/mcp"
)

// An upstream streamable-HTTP server is held to the mcp module's bounds:
// a result over MaxContentBytes reaches the model cut and marked, and an
// endpoint that redirects registers nothing, so a proxy with only it does
// not start.
func TestProxy_StreamableHTTPUpstreamKeepsTheMCPBounds(t *testing.T) {
	h := newHarness(t, func(doc map[string]any) {
		doc["servers"].([]any)[0].(map[string]any)["rules"].(map[string]any)["big"] = map[string]any{"side_effect": "read_only"}
	})
	got := h.expect("", "up_big", `{}`)
	mustf(t, len(got) <= mcp.DefaultMaxContentBytes && strings.HasSuffix(got, "[truncated]"), "big result: %d bytes, ends %q", len(got), got[len(got)-20:])

	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, h.up.url, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	h.stop()
	h.cfgDoc["servers"].([]any)[0].(map[string]any)["endpoint"] = redirect.URL + "/mcp"
	h.writeConfig()
	_, err := New(context.Background(), h.cfg, Options{Stderr: h.stderr})
	mustf(t, errors.Is(err, ErrNoTools) && strings.Contains(h.stderr.String(), "redirect"), "a redirecting upstream: %v\n%s", err, h.stderr)
	_, err = Check(context.Background(), h.cfg)
	mustf(t, err != nil, "check of a redirecting upstream passed")
}
