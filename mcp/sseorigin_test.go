package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// A legacy SSE server whose endpoint event names a message endpoint on
// another origin (the same host, another port: a second listener that
// records every request) gets nothing posted there: not initialize, not
// its headers. The connection fails with one sentence naming both
// origins. Before, the SDK's transport posted initialize wherever the
// event pointed.
func TestSSE_EndpointOnAnotherOriginIsRefusedBeforeAnythingIsPosted(t *testing.T) {
	var mu sync.Mutex
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.String())
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			mu.Lock()
			got = append(got, "the SSE server itself: "+r.Method)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", other.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer sse.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Pin(ctx, Server{Name: "legacy", Endpoint: sse.URL + "/sse", SSE: true,
		HTTPClient: &http.Client{Transport: headerTransport{}}})
	var oe *OriginError
	if !errors.As(err, &oe) || oe.Named != originOf(mustURL(t, other.URL)) || oe.Want != originOf(mustURL(t, sse.URL)) {
		t.Fatalf("err = %v, want an OriginError naming both origins", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Count(msg, ". ") > 0 || strings.Contains(msg, "sessionid") {
		t.Fatalf("not one sentence naming only the origins: %q", msg)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Fatalf("requests were posted: %q", got)
	}
}

// headerTransport adds a credential, as an operator's headers do.
type headerTransport struct{}

func (headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer operator-secret")
	return http.DefaultTransport.RoundTrip(r)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
