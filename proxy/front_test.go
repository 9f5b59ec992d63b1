package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/httpguard"
	"github.com/agentrt/agentrt/proxy/internal/front"
)

// front starts the harness proxy's loopback front with edit applied to its
// configuration, and stops it when the test ends.
func (h *harness) front(edit func(*FrontConfig)) *Front {
	h.t.Helper()
	fc, err := DefaultFrontConfig("127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	if edit != nil {
		edit(&fc)
	}
	f, err := h.p.NewFront(fc)
	if err != nil {
		h.t.Fatalf("NewFront: %v", err)
	}
	if err := f.Listen(); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("front Serve: %v", err)
		}
	})
	return f
}

// bearer adds a token to every request a client sends.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectFront opens one MCP session through the front, as an HTTP host
// of MCP 2025-11-25 (a 2026-07-28 host holds no session).
func connectFront(t *testing.T, f *Front, token string) (*sdk.ClientSession, error) {
	return connectFrontAt(t, f, token, "2025-11-25")
}

// connectFrontAt connects an HTTP host of protocol version to the front.
func connectFrontAt(t *testing.T, f *Front, token, version string) (*sdk.ClientSession, error) {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "http-host", Version: "1"}, nil)
	return client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: f.URL(), MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one raw JSON-RPC body to the front.
func post(t *testing.T, f *Front, body io.Reader, hdr map[string]string) (*http.Response, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.URL(), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e map[string]string
	_ = json.Unmarshal(b, &e)
	return res, e
}

// A host on the front sees the same tools under the same gate as one on
// stdio: a read runs, a write waits for an operator and has not run.
func TestFront_ServesTheSameGatedTools(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(nil)
	cs, err := connectFront(t, f, f.Token())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(context.Background(), nil)
	mustf(t, err == nil && len(lt.Tools) == 3, "tools: %v %v", lt, err)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "up_read", Arguments: map[string]any{"path": "a"}})
	mustf(t, err == nil && text(res) == "content of a", "read: %v %v", res, err)
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "up_write", Arguments: map[string]any{"path": "a", "content": "x"}})
	mustf(t, err == nil && strings.HasPrefix(text(res), string(StatusPendingApproval)), "write: %v %v", text(res), err)
	mustf(t, h.up.count() == 0, "the write took effect: %v", h.up.effectsNow())
}

// Every request needs the bearer token: none, a wrong one, another scheme
// and two Authorization headers are all 401, and nothing reaches the MCP
// server (no session opens).
func TestFront_MissingOrWrongTokenIs401(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(nil)
	for name, hdr := range map[string]map[string]string{
		"none":   {},
		"wrong":  {"Authorization": "Bearer " + strings.Repeat("0", 64)},
		"prefix": {"Authorization": "Bearer " + f.Token()[:32]},
		"basic":  {"Authorization": "Basic " + f.Token()},
		"bare":   {"Authorization": f.Token()},
	} {
		res, e := post(t, f, strings.NewReader(initBody), hdr)
		mustf(t, res.StatusCode == http.StatusUnauthorized && e["code"] == FrontCodeUnauthorized, "%s: %d %v", name, res.StatusCode, e)
		mustf(t, strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer"), "%s: no WWW-Authenticate", name)
	}
	_, err := connectFront(t, f, "not-the-token")
	mustf(t, err != nil, "a client with the wrong token connected")
	mustf(t, anySessions(f) == 0, "a refused request reached the server")

	res, _ := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": "Bearer " + f.Token()})
	mustf(t, res.StatusCode == http.StatusOK, "the right token: %d", res.StatusCode)
}

// sessions counts the front's initialized sessions.
func sessions(f *Front) int {
	n := 0
	for ss := range f.Server().Sessions() {
		if ss.InitializeParams() != nil {
			n++
		}
	}
	return n
}

// anySessions counts every session the front's server holds, initialized
// or not: zero means no request reached it.
func anySessions(f *Front) int {
	n := 0
	for range f.Server().Sessions() {
		n++
	}
	return n
}

// A request whose Origin is not the front's own loopback origin is 403,
// token or not, as the MCP transport asks against DNS rebinding; so is a
// Host that is not loopback. The front's own origin passes.
func TestFront_ForeignOriginIs403(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(nil)
	_, port, _ := net.SplitHostPort(f.Addr())
	auth := "Bearer " + f.Token()
	for _, o := range []string{"http://evil.example", "http://evil.example:" + port, "https://127.0.0.1:" + port,
		"http://127.0.0.1:1", "http://127.0.0.1.evil.example:" + port, "null", "http://user@127.0.0.1:" + port} {
		res, e := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": auth, "Origin": o})
		mustf(t, res.StatusCode == http.StatusForbidden && e["code"] == FrontCodeForeignOrigin, "Origin %s: %d %v", o, res.StatusCode, e)
	}
	for _, host := range []string{"evil.example:" + port, "127.0.0.1.evil.example:" + port, "127.0.0.1:1", "127.0.0.1"} {
		res, e := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": auth, "Host": host})
		mustf(t, res.StatusCode == http.StatusForbidden && e["code"] == FrontCodeForeignHost, "Host %s: %d %v", host, res.StatusCode, e)
	}
	mustf(t, anySessions(f) == 0, "a refused request reached the server")
	for _, o := range []string{"http://127.0.0.1:" + port, "http://localhost:" + port} {
		res, _ := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": auth, "Origin": o})
		mustf(t, res.StatusCode == http.StatusOK, "own Origin %s: %d", o, res.StatusCode)
	}
}

// A body over the bound is 413, whether it declares its length or is sent
// in chunks.
func TestFront_OversizedBodyIs413(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(func(c *FrontConfig) { c.MaxBodyBytes = 4096 })
	auth := map[string]string{"Authorization": "Bearer " + f.Token()}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("a", 8192) + `"}}}`
	res, e := post(t, f, strings.NewReader(big), auth)
	mustf(t, res.StatusCode == http.StatusRequestEntityTooLarge && e["code"] == FrontCodeBodyTooLarge, "declared: %d %v", res.StatusCode, e)
	res, _ = post(t, f, io.MultiReader(strings.NewReader(big)), auth) // no length: chunked
	mustf(t, res.StatusCode == http.StatusRequestEntityTooLarge, "chunked: %d", res.StatusCode)
	waitFor(t, "no session left by an oversized request", func() bool { return anySessions(f) == 0 })
}

// Sessions are bounded in number: at MaxSessions a new one closes the
// least recently used idle one, and is refused with 503 only while every
// open one has a POST in flight; the open ones keep working. An idle
// session is closed after SessionIdle.
func TestFront_TooManySessionsAreRefused(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(func(c *FrontConfig) { c.MaxSessions = 2 })
	a, err := connectFront(t, f, f.Token())
	mustf(t, err == nil, "first: %v", err)
	defer a.Close()
	b, err := connectFront(t, f, f.Token())
	mustf(t, err == nil, "second: %v", err)
	defer b.Close()
	// Both sessions busy: a POST of each is in flight, its body unsent.
	for _, cs := range []*sdk.ClientSession{a, b} {
		holdPost(t, f, cs.ID())
	}
	waitFor(t, "both sessions busy", func() bool { return busy(f) == 2 })
	res, e := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": "Bearer " + f.Token()})
	mustf(t, res.StatusCode == http.StatusServiceUnavailable && e["code"] == FrontCodeTooManySession, "a third while both are busy: %d %v", res.StatusCode, e)
	mustf(t, sessions(f) == 2, "a busy session was closed")

	idle := newHarness(t, nil).front(func(c *FrontConfig) { c.SessionIdle = time.Second })
	s, err := connectFront(t, idle, idle.Token())
	mustf(t, err == nil, "connect: %v", err)
	defer s.Close()
	waitFor(t, "the idle session to close", func() bool { return sessions(idle) == 0 })
}

// holdPost starts a POST of session id whose declared body never comes,
// so the session has a request in flight until the test ends.
func holdPost(t *testing.T, f *Front, id string) {
	t.Helper()
	c, err := net.Dial("tcp", f.Addr())
	mustf(t, err == nil, "dial: %v", err)
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", FrontPath, f.Addr(), f.Token(), id)
}

// busy counts the sessions with a POST in flight.
func busy(f *Front) int { return f.Busy() }

// A client holding the front's token that opens every session it may
// does not lock a new client out: the new session closes the least
// recently used of the old ones, oldest first, and the rest keep working.
func TestFront_SessionCapLeavesRoomForANewClient(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(nil) // DefaultFrontMaxSessions
	var greedy []*sdk.ClientSession
	for i := 0; i < DefaultFrontMaxSessions; i++ {
		cs, err := connectFront(t, f, f.Token())
		mustf(t, err == nil, "greedy session %d: %v", i+1, err)
		defer cs.Close()
		greedy = append(greedy, cs)
	}
	// The second is used again, so the first is the least recently used,
	// then the third.
	_, err := greedy[1].ListTools(context.Background(), nil)
	mustf(t, err == nil, "using the second: %v", err)
	ids := map[string]bool{}
	for ss := range f.Server().Sessions() {
		ids[ss.ID()] = true
	}
	mustf(t, len(ids) == DefaultFrontMaxSessions, "%d sessions open", len(ids))

	for n, wantGone := range []int{0, 2} {
		fresh, err := connectFront(t, f, f.Token())
		mustf(t, err == nil, "new client %d at the cap: %v", n+1, err)
		defer fresh.Close()
		_, err = fresh.ListTools(context.Background(), nil)
		mustf(t, err == nil, "the new client's session: %v", err)
		gone := greedy[wantGone].ID()
		waitFor(t, "the least recently used session to close", func() bool {
			for ss := range f.Server().Sessions() {
				if ss.ID() == gone {
					return false
				}
			}
			return true
		})
		mustf(t, sessions(f) <= DefaultFrontMaxSessions, "%d sessions open past the cap", sessions(f))
	}
	for i, cs := range greedy {
		if i == 0 || i == 2 {
			continue
		}
		_, err := cs.ListTools(context.Background(), nil)
		mustf(t, err == nil, "greedy session %d stopped working: %v", i+1, err)
	}
}

// A refused request whose declared body never arrives is answered at once
// with Connection: close, not after the front's one-minute read timeout;
// one source's connections are capped while the front still serves.
func TestServers_SlowBodyIsRefusedAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(nil)
	for name, head := range map[string]string{
		"no token":      fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n{", FrontPath, f.Addr()),
		"declared 2MiB": fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n{", FrontPath, f.Addr(), f.Token(), 2<<20),
		"foreign host":  fmt.Sprintf("POST %s HTTP/1.1\r\nHost: evil.test\r\nContent-Length: 100000\r\n\r\n{", FrontPath),
	} {
		status, closes, elapsed, err := httpguard.SendHead(f.Addr(), head, 30*time.Second)
		mustf(t, err == nil, "%s: no answer: %v", name, err)
		t.Logf("%s: %d after %s", name, status, elapsed)
		mustf(t, status >= 400 && closes, "%s: %d, Connection: close %v", name, status, closes)
		mustf(t, elapsed < 10*time.Second, "%s: answered after %s, waiting for the body", name, elapsed)
	}
	// Connections past the per-source cap are closed as accepted: of
	// cap+5 opened at once, at least 5 are closed (a dial reset counts),
	// and no more than the cap are kept.
	kept, refused := httpguard.Flood(f.Addr(), front.MaxConnsPerSource+5)
	mustf(t, refused >= 5 && kept <= front.MaxConnsPerSource, "of %d connections from one source %d were kept and %d refused; the cap is %d",
		front.MaxConnsPerSource+5, kept, refused, front.MaxConnsPerSource)
	waitFor(t, "the front to serve again", func() bool {
		req, _ := http.NewRequest(http.MethodPost, f.URL(), strings.NewReader(initBody))
		req.Header.Set("Authorization", "Bearer "+f.Token())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// The front listens on loopback only, on an address it was given as an IP
// literal; a name, a wildcard, a short token or a bad bound is refused
// before anything listens.
func TestFront_RefusesAnythingButLoopback(t *testing.T) {
	h := newHarness(t, nil)
	tok, _ := NewFrontToken()
	for _, c := range []FrontConfig{
		{Addr: "0.0.0.0:0", Token: tok}, {Addr: "[::]:0", Token: tok}, {Addr: "localhost:0", Token: tok},
		{Addr: "192.168.1.1:0", Token: tok}, {Addr: ":0", Token: tok}, {Addr: "127.0.0.1:0", Token: "short"},
		{Addr: "127.0.0.1:0", Token: tok, MaxSessions: -1}, {Addr: "127.0.0.1:0", Token: tok, MaxBodyBytes: 10},
	} {
		_, err := h.p.NewFront(c)
		var ce *agentrt.ConfigError
		mustf(t, errors.As(err, &ce), "%+v: %v", c, err)
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "127.0.0.2:0"} {
		_, err := h.p.NewFront(FrontConfig{Addr: addr, Token: tok})
		mustf(t, err == nil, "%s: %v", addr, err)
	}
}

// A token file is read only when its owner alone can read it, and must
// hold one word of at least MinFrontTokenBytes.
func TestFront_TokenFileMustBeOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	tok, _ := NewFrontToken()
	path := filepath.Join(dir, "token")
	mustf(t, os.WriteFile(path, []byte(tok+"\n"), 0o600) == nil, "write")
	got, err := ReadFrontToken(path)
	mustf(t, err == nil && got == tok, "0600: %q %v", got, err)
	mustf(t, os.Chmod(path, 0o640) == nil, "chmod")
	_, err = ReadFrontToken(path)
	mustf(t, errors.Is(err, agentrt.ErrInsecureMode), "0640: %v", err)
	short := filepath.Join(dir, "short")
	mustf(t, os.WriteFile(short, []byte("abc"), 0o600) == nil, "write")
	_, err = ReadFrontToken(short)
	mustf(t, err != nil, "a short token was accepted")
}

// Hosts of MCP 2026-07-28 are served statelessly beside the sessions of
// 2025-11-25 hosts, chosen per request: with the session bound at one
// and that one session open, three 2026-07-28 hosts list and call tools,
// no session is added for them, and server/discover lists both versions.
func TestFront_StatelessHostsBesideSessions(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(func(c *FrontConfig) { c.MaxSessions = 1 })
	old, err := connectFront(t, f, f.Token())
	mustf(t, err == nil, "2025-11-25 host: %v", err)
	defer old.Close()
	for i := range 3 {
		cs, err := connectFrontAt(t, f, f.Token(), "2026-07-28")
		mustf(t, err == nil, "2026-07-28 host %d: %v", i+1, err)
		defer cs.Close()
		init := cs.InitializeResult()
		mustf(t, init != nil && init.ProtocolVersion == "2026-07-28", "host %d negotiated %+v", i+1, init)
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "gate_status", Arguments: map[string]any{}})
		mustf(t, err == nil && !res.IsError, "host %d status call: %+v, %v", i+1, res, err)
	}
	_, err = old.ListTools(context.Background(), nil)
	mustf(t, err == nil, "the 2025-11-25 session after the stateless hosts: %v", err)
	n := 0
	for range f.Server().Sessions() {
		n++
	}
	mustf(t, n == 1, "%d sessions open, want the one 2025-11-25 session", n)

	body := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, f.URL(), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.Token())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	mustf(t, err == nil, "discover: %v", err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	mustf(t, resp.StatusCode == 200 && strings.Contains(string(raw), `"2026-07-28"`) && strings.Contains(string(raw), `"2025-11-25"`),
		"server/discover: %d %s", resp.StatusCode, raw)
}

// frontPost sends one stateless 2026-07-28 request to the front, the
// tasks extension declared, and returns its JSON-RPC result or error as
// raw JSON (the body is JSON or one SSE event).
func frontPost(t *testing.T, f *Front, method, name string, params map[string]any) (result, rpcErr json.RawMessage) {
	t.Helper()
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, f.URL(), strings.NewReader(string(b)))
	for k, v := range map[string]string{"Authorization": "Bearer " + f.Token(), "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	mustf(t, err == nil, "%s: %v", method, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	if i := strings.Index(body, "data: "); i >= 0 {
		body = strings.TrimSpace(strings.SplitN(body[i+len("data: "):], "\n", 2)[0])
	}
	var msg struct{ Result, Error json.RawMessage }
	mustf(t, resp.StatusCode == 200 && json.Unmarshal([]byte(body), &msg) == nil, "%s: %d %s", method, resp.StatusCode, raw)
	return msg.Result, msg.Error
}

// Over the front, each request its own stateless exchange, a held write
// of a tasks-extension host answers a task handle, tasks/get follows it
// in later requests (no session holds it), and after the approval the
// write runs once and its result is reported to every poll.
func TestFront_TaskHandleOutlivesTheRequestThatMadeIt(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(nil)
	res, e := frontPost(t, f, "tools/call", "up_write", map[string]any{"name": "up_write", "arguments": map[string]any{"path": "p", "content": "c"}})
	var tk struct{ ResultType, TaskID, Status string }
	mustf(t, e == nil && json.Unmarshal(res, &tk) == nil && tk.ResultType == "task" && tk.TaskID != "", "tools/call: %s %s", res, e)
	get := func() (string, string) {
		res, e := frontPost(t, f, "tasks/get", tk.TaskID, map[string]any{"taskId": tk.TaskID})
		var got struct {
			Status string
			Result json.RawMessage
		}
		mustf(t, e == nil && json.Unmarshal(res, &got) == nil, "tasks/get: %s %s", res, e)
		return got.Status, string(got.Result)
	}
	st, _ := get()
	pending := h.pending()
	mustf(t, st == "working" && len(pending) == 1 && h.up.count() == 0, "before the decision: %s, %d pending, effects %v", st, len(pending), h.up.effectsNow())
	h.decide(pending[0], true, "ok")
	var result string
	waitFor(t, "the task to complete", func() bool {
		st, result = get()
		return st == "completed"
	})
	st, again := get()
	mustf(t, st == "completed" && again == result && h.up.count() == 1, "after: %s %s (first %s), effects %v", st, again, result, h.up.effectsNow())
}
