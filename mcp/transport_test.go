package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	agentrt "github.com/agentrt/agentrt"
)

// httpMCP is a streamable HTTP MCP server written by hand: initialize is
// answered as JSON, notifications get 202, the standalone GET stream 405,
// and every other request goes to respond, which writes the response.
func httpMCP(t *testing.T, respond func(w http.ResponseWriter, id json.RawMessage, method string)) *httptest.Server {
	return httpMCPStreams(t, nil, respond)
}

// httpMCPStreams is httpMCP whose GET requests (the event streams) go to
// get; nil answers them 405.
func httpMCPStreams(t *testing.T, get http.HandlerFunc, respond func(w http.ResponseWriter, id json.RawMessage, method string)) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(mcpHandler(get, respond))
	t.Cleanup(s.Close)
	return s
}

// mcpHandler is httpMCPStreams's handler.
func mcpHandler(get http.HandlerFunc, respond func(w http.ResponseWriter, id json.RawMessage, method string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && get != nil {
			get(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if req.Method == "initialize" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, initResult)
			return
		}
		if req.Method == "server/discover" {
			// A server of the 2025-11-25 revision.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
			return
		}
		respond(w, req.ID, req.Method)
	})
}

func httpServer(endpoint string) Server {
	return Server{Name: "web", Endpoint: endpoint, ConnectTimeout: 10 * time.Second, DefaultTimeout: 5 * time.Second}
}

// Over streamable HTTP the pin is read from the raw JSON body, numbers and
// all, and a call's structured content keeps its numbers too.
func TestPin_OverStreamableHTTPReadsTheRawSchema(t *testing.T) {
	s := httpMCP(t, func(w http.ResponseWriter, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "application/json")
		switch method {
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big","inputSchema":{"type":"object","properties":{"n":{"maximum":12345678901234567890}}},"annotations":{"readOnlyHint":true}}]}}`, id)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"n":12345678901234567890}}}`, id)
		}
	})
	srv := httpServer(s.URL)
	m := pin(t, srv)
	must(t, strings.Contains(string(m.Tools["big"].InputSchema), "12345678901234567890"), "pinned %s", m.Tools["big"].InputSchema)
	tools, _ := load(t, srv, m, Rules{"big": {SideEffect: agentrt.ReadOnly}})
	res, err := tools[0].Call(context.Background(), agentrt.ToolCall{})
	must(t, err == nil && string(res.Content) == `{"n":12345678901234567890}`, "call: %s %v", res.Content, err)
}

// An event stream carrying a tools/list result under an event name the SDK
// skips (and one with no data) must not be what is pinned: only the
// "message" event the SDK acts on is recorded.
func TestMessageTap_SkipsEventsTheSDKIgnores(t *testing.T) {
	s := httpMCP(t, func(w http.ResponseWriter, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "text/event-stream")
		evil := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"evil":{}}}}]}}`, id)
		good := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"good":{}}}}]}}`, id)
		fmt.Fprintf(w, ": a comment\n\nevent: ping\ndata: %s\n\nevent: message\nid: 1\n\nevent: message\r\ndata: %s\r\n\r\n", evil, good)
	})
	m := pin(t, httpServer(s.URL))
	schema := string(m.Tools["t"].InputSchema)
	must(t, strings.Contains(schema, "good") && !strings.Contains(schema, "evil"), "pinned %s", schema)
}

// A server that redirects is refused: the error names only the host it
// pointed at, and nothing reaches that host.
func TestHTTP_RedirectIsNotFollowed(t *testing.T) {
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer elsewhere.Close()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/collect?token=s3cret", http.StatusTemporaryRedirect)
	}))
	defer s.Close()
	_, err := Pin(context.Background(), httpServer(s.URL))
	must(t, errors.Is(err, ErrRedirect), "Pin: %v", err)
	must(t, strings.Contains(err.Error(), strings.TrimPrefix(elsewhere.URL, "http://")), "the error does not name the host: %v", err)
	must(t, !strings.Contains(err.Error(), "s3cret") && !strings.Contains(err.Error(), "collect"), "the error names more than the host: %v", err)
	must(t, hits.Load() == 0, "the redirect reached the other host %d times", hits.Load())
}

// A body that declares more than MaxResponseBodyBytes is refused before
// it is read.
func TestHTTP_BodyOverTheLimitFails(t *testing.T) {
	s := httpMCP(t, func(w http.ResponseWriter, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(MaxResponseBodyBytes+1))
		w.WriteHeader(http.StatusOK)
	})
	_, err := Pin(context.Background(), httpServer(s.URL))
	must(t, errors.Is(err, ErrBodyTooLarge) || (err != nil && strings.Contains(err.Error(), "too large")), "Pin: %v", err)
}

// The real everything server echoes a message longer than the cap: the
// content is a JSON string of at most MaxContentBytes, cut on a rune
// boundary, marked, and the summary says so.
func TestCall_OversizedContentIsTruncated(t *testing.T) {
	srv := everythingServer(t)
	srv.MaxContentBytes = 100
	m := pin(t, srv)
	tools, _ := load(t, srv, m, Rules{"echo": {SideEffect: agentrt.ReadOnly}})
	msg := strings.Repeat("é<", 200)
	args, _ := json.Marshal(map[string]string{"message": msg})
	res, err := tools[0].Call(context.Background(), agentrt.ToolCall{Args: args})
	must(t, err == nil, "echo: %v", err)
	must(t, len(res.Content) <= 100, "content is %d bytes, cap 100", len(res.Content))
	var text string
	must(t, json.Unmarshal(res.Content, &text) == nil && utf8.ValidString(text), "content is not a valid JSON string: %s", res.Content)
	must(t, strings.HasSuffix(text, truncMarker) && strings.Contains(text, "é<"), "content %q", text)
	must(t, strings.Contains(res.Summary, "truncated"), "summary %q", res.Summary)
	// What the driver will store is no bigger.
	c, err := agentrt.CanonicalJSON(res.Content)
	must(t, err == nil && len(c) <= 100, "canonical content is %d bytes: %v", len(c), err)
}

// capText never exceeds the cap on the encoded bytes, never splits a rune,
// and counts an invalid byte as the escape it becomes.
func TestCapText_NeverExceedsTheCap(t *testing.T) {
	inputs := []string{strings.Repeat("a", 500), strings.Repeat("日本", 100), strings.Repeat("\x00<&\u2028", 50), strings.Repeat("\xff", 80), strings.Repeat("🙂", 60)}
	for _, in := range inputs {
		for max := 0; max < 300; max += 7 {
			out, cut := capText(in, max)
			limit := max
			if n := 2 + encodedLen(truncMarker); limit < n {
				limit = n
			}
			if len(out) > limit {
				t.Fatalf("capText(%q..., %d) = %d bytes", in[:8], max, len(out))
			}
			var s string
			if err := json.Unmarshal(out, &s); err != nil || !utf8.ValidString(s) {
				t.Fatalf("capText(%q..., %d) = %s: not a JSON string", in[:8], max, out)
			}
			if c, _ := agentrt.CanonicalJSON(out); len(c) > len(out) {
				t.Fatalf("canonical form of %s is %d bytes, more than %d", out, len(c), len(out))
			}
			must(t, cut == (len(out) < 2+encodedLen(in)) || !cut, "cut flag wrong for %d", max)
		}
	}
}

// A failing server's error message, its stderr and a tool name it chose
// reach the operator escaped: no escape sequence, no line break.
func TestPin_ErrorEscapesTheServersMessage(t *testing.T) {
	srv := rawServer("raw", func(method string, _ json.RawMessage) (string, bool) {
		if method == "tools/list" {
			return `ERROR "denied\n\u001b[2Jregistered evil as x (read_only)\u202e"`, true
		}
		return "", false
	})
	_, err := Pin(context.Background(), srv)
	must(t, err != nil, "Pin succeeded")
	msg := err.Error()
	must(t, !strings.ContainsAny(msg, "\n\x1b\u202e"), "the error carries the server's control characters: %q", msg)
	must(t, strings.Contains(msg, "denied"), "the error lost the message: %q", msg)
	// The original is still there for a caller that unwraps.
	var se *serverError
	must(t, errors.As(err, &se) && strings.Contains(se.err.Error(), "\x1b"), "the server's error is not kept: %v", err)

	srv = rawServer("raw", listOnly(`{"tools":[{"name":"x\u001b[31m\nevil","description":1,"inputSchema":{"type":"object"}}]}`))
	_, err = Pin(context.Background(), srv)
	must(t, err != nil && !strings.ContainsAny(err.Error(), "\n\x1b"), "Pin of a bad tool: %q", err)
}

// Report.String escapes every server-chosen value, so a tool name cannot
// forge a line of the report or drive the terminal.
func TestReport_StringEscapesWhatTheServerChose(t *testing.T) {
	evil := "t\nregistered evil as evil_tool (read_only)\x1b[2J\u202e"
	name, _ := json.Marshal(evil)
	srv := rawServer("raw", listOnly(`{"tools":[{"name":"ok","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},{"name":`+string(name)+`,"inputSchema":{"type":"object"}}]}`))
	m := pin(t, srv)
	_, rep := load(t, srv, m, Rules{"ok": {SideEffect: agentrt.ReadOnly}, evil: {SideEffect: agentrt.ReadOnly, Rename: "bad name!"}})
	out := rep.String()
	for _, line := range strings.Split(out, "\n") {
		must(t, !strings.HasPrefix(line, "registered evil"), "a forged line: %q", out)
	}
	must(t, !strings.ContainsAny(out, "\x1b\u202e"), "the report carries control characters: %q", out)
	must(t, strings.Contains(out, "refused t"), "the refusal is missing: %q", out)
	must(t, registered(rep, "ok"), "ok not registered: %q", out)
}

// A manifest or rules file that group or others can write is refused, so
// is a symbolic link; an owner-only file is read.
func TestReadOwned_RefusesAFileOthersCanWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(p, []byte(`{"echo":{"side_effect":"read_only","timeout":"5s"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := ReadRules(p)
	must(t, err == nil && rules["echo"].SideEffect == agentrt.ReadOnly && rules["echo"].Timeout == 5*time.Second, "ReadRules: %v %v", rules, err)
	for _, mode := range []os.FileMode{0o620, 0o602, 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadOwned(p)
		must(t, errors.Is(err, agentrt.ErrInsecureMode), "mode %o: %v", mode, err)
		_, err = ReadRules(p)
		must(t, errors.Is(err, agentrt.ErrInsecureMode), "ReadRules mode %o: %v", mode, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadOwned(p)
	must(t, err == nil, "a file others can only read: %v", err)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	_, err = ReadOwned(link)
	must(t, errors.Is(err, agentrt.ErrSymlink), "symlink: %v", err)
}

// A rules file with an unknown field, a repeated key or a bad class is
// refused, naming the path.
func TestReadRules_RefusesWhatItDoesNotKnow(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown":  `{"echo":{"side_effect":"read_only","sideeffect":"destructive"}}`,
		"repeated": `{"echo":{"side_effect":"read_only"},"echo":{"side_effect":"destructive"}}`,
		"class":    `{"echo":{"side_effect":"harmless"}}`,
		"timeout":  `{"echo":{"side_effect":"read_only","timeout":"soon"}}`,
	} {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadRules(p)
		must(t, err != nil && strings.Contains(err.Error(), p), "%s: %v", name, err)
	}
}
