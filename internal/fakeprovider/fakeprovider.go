package fakeprovider

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
)

// maxRequestBytes bounds a request body the server reads.
const maxRequestBytes = 16 << 20

// ToolCall is one function call in a scripted turn. Arguments are sent as
// given, so a script can send arguments that are not valid JSON.
type ToolCall struct {
	Name      string
	Arguments string
}

// Turn is one scripted reply.
type Turn struct {
	// Text is the message content; zero sends null.
	Text string
	// ToolCalls are sent with ids "call_<turn>_<index>".
	ToolCalls []ToolCall
	// FinishReason is sent as is. Zero means "tool_calls" when the turn has
	// tool calls and "stop" otherwise.
	FinishReason string
	// Usage is sent as prompt_tokens, completion_tokens and
	// prompt_tokens_details.cached_tokens.
	Usage agentrt.Usage
	// UsageJSON, when set, is sent as the usage object verbatim instead, so a
	// script can report usage no adapter should believe.
	UsageJSON string
}

// Server replays a script: the i-th request gets turn i, and every request
// after the last turn gets HTTP 500 with an OpenAI-style error body.
type Server struct {
	ln  net.Listener
	srv *http.Server
	url string

	mu       sync.Mutex
	script   []Turn
	next     int
	key      string
	requests [][]byte
}

// New starts a server on 127.0.0.1 replaying script. It panics if it cannot
// listen, as httptest does; it is for tests.
func New(script []Turn) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakeprovider: listening on 127.0.0.1: %v", err))
	}
	s := &Server{ln: ln, script: append([]Turn(nil), script...), url: "http://" + ln.Addr().String() + "/v1"}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s
}

// SetKey makes the server require "Authorization: Bearer <key>"; a request
// without it gets HTTP 401. An empty key requires nothing.
func (s *Server) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// URL is the API root to use as an OpenAI base URL: http://127.0.0.1:<port>/v1.
func (s *Server) URL() string { return s.url }

// Close stops the server and closes its connections.
func (s *Server) Close() { _ = s.srv.Close() }

// Requests returns a copy of every request body received, in order.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.requests))
	for i, b := range s.requests {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	_, _ = w.Write(body)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "fakeprovider serves only POST /v1/chat/completions")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "too_large", "the request body is too large")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, body)
	key := s.key
	s.mu.Unlock()

	if key != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+key)) != 1 {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_body", "the request body is not a chat completion request with a model")
		return
	}
	if req.Stream {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "unsupported", "fakeprovider does not stream")
		return
	}

	s.mu.Lock()
	i := s.next
	s.next++
	var turn *Turn
	if i < len(s.script) {
		turn = &s.script[i]
	}
	s.mu.Unlock()
	if turn == nil {
		writeError(w, http.StatusInternalServerError, "server_error", "script_exhausted", fmt.Sprintf("fakeprovider: the script has %d turn(s) and this is request %d", len(s.script), i+1))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(completion(i, req.Model, turn))
}

// completion renders turn i as a chat completion object.
func completion(i int, model string, t *Turn) []byte {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if t.Text != "" {
		msg["content"] = t.Text
	}
	if len(t.ToolCalls) > 0 {
		calls := make([]toolCall, len(t.ToolCalls))
		for j, c := range t.ToolCalls {
			calls[j] = toolCall{ID: fmt.Sprintf("call_%d_%d", i, j), Type: "function", Function: function(c)}
		}
		msg["tool_calls"] = calls
	}
	finish := t.FinishReason
	if finish == "" {
		finish = "stop"
		if len(t.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	var usage any = map[string]any{
		"prompt_tokens":         t.Usage.InputTokens,
		"completion_tokens":     t.Usage.OutputTokens,
		"total_tokens":          t.Usage.InputTokens + t.Usage.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": t.Usage.CachedInputTokens},
	}
	if t.UsageJSON != "" {
		usage = json.RawMessage(t.UsageJSON)
	}
	body, err := json.Marshal(map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", i),
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   usage,
	})
	if err != nil {
		// Only an invalid UsageJSON gets here; send it anyway, as a broken
		// server would.
		return []byte(fmt.Sprintf(`{"id":"chatcmpl-fake-%d","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":%q}],"usage":%s}`, i, finish, t.UsageJSON))
	}
	return body
}
