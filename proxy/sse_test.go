package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/mcp"
)

// A legacy SSE upstream ("transport": "sse") is reached through the SDK's
// SSE client transport under the streamable HTTP bounds: a read answers,
// a write waits for approval and runs once, a result over
// MaxContentBytes reaches the model cut and marked, an endpoint that
// redirects registers nothing, and an event over MaxResponseBodyBytes
// ends the connection instead of being buffered.
func TestProxy_LegacySSEUpstreamKeepsTheMCPBounds(t *testing.T) {
	h := newHarness(t, func(doc map[string]any) {
		doc["servers"].([]any)[0].(map[string]any)["rules"].(map[string]any)["big"] = map[string]any{"side_effect": "read_only"}
	})
	h.stop()
	h.cfgDoc["servers"].([]any)[0].(map[string]any)["transport"] = "sse"
	h.cfgDoc["servers"].([]any)[0].(map[string]any)["endpoint"] = h.up.sseURL
	h.writeConfig()
	mustf(t, h.cfg.Servers[0].SSE, "transport sse was not read")
	h.pin()
	h.start()
	got := h.expect("", "up_read", `{"path":"a"}`)
	mustf(t, got == "content of a", "read over SSE: %q\n%s", got, h.stderr)
	h.expect(StatusPendingApproval, "up_write", `{"path":"w","content":"x"}`)
	h.decide(h.onlyPending("local_mutation"), true, "ok")
	h.expect("", "up_write", `{"path":"w","content":"x"}`)
	h.expect(StatusDuplicate, "up_write", `{"path":"w","content":"x"}`)
	mustf(t, h.up.count() == 1, "the write ran %d times", h.up.count())
	got = h.expect("", "up_big", `{}`)
	mustf(t, len(got) <= mcp.DefaultMaxContentBytes && strings.HasSuffix(got, "[truncated]"), "big result: %d bytes", len(got))
	h.stop()

	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, h.up.sseURL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	h.cfgDoc["servers"].([]any)[0].(map[string]any)["endpoint"] = redirect.URL + "/sse"
	h.writeConfig()
	_, err := New(context.Background(), h.cfg, Options{Stderr: h.stderr})
	mustf(t, errors.Is(err, ErrNoTools) && strings.Contains(h.stderr.String(), "redirect"), "a redirecting SSE upstream: %v\n%s", err, h.stderr)

	// The stream names its message endpoint, then sends one event larger
	// than any body may be.
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: /msg\n\n")
		w.(http.Flusher).Flush()
		chunk := strings.Repeat("x", 1<<20)
		io := "event: message\ndata: "
		w.Write([]byte(io))
		for i := 0; i < (mcp.MaxResponseBodyBytes>>20)+2; i++ {
			if _, err := w.Write([]byte(chunk)); err != nil {
				return
			}
		}
		// The event never ends: only a bound ends the wait before the
		// connect timeout.
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer huge.Close()
	h.stderr = &syncBuffer{}
	h.cfgDoc["servers"].([]any)[0].(map[string]any)["endpoint"] = huge.URL + "/sse"
	h.cfgDoc["servers"].([]any)[0].(map[string]any)["connect_timeout"] = "5s"
	h.writeConfig()
	_, err = New(context.Background(), h.cfg, Options{Stderr: h.stderr})
	mustf(t, errors.Is(err, ErrNoTools) && !strings.Contains(h.stderr.String(), "connect timeout"),
		"an SSE upstream sending an oversized event: %v\n%s", err, h.stderr)
}
