package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
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

// connectFront opens one MCP session through the front, as an HTTP host.
func connectFront(t *testing.T, f *Front, token string) (*sdk.ClientSession, error) {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "http-host", Version: "1"}, nil)
	return client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: f.URL(), MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
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
	cs, err := connectFront(t, f, f.cfg.Token)
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
		"prefix": {"Authorization": "Bearer " + f.cfg.Token[:32]},
		"basic":  {"Authorization": "Basic " + f.cfg.Token},
		"bare":   {"Authorization": f.cfg.Token},
	} {
		res, e := post(t, f, strings.NewReader(initBody), hdr)
		mustf(t, res.StatusCode == http.StatusUnauthorized && e["code"] == FrontCodeUnauthorized, "%s: %d %v", name, res.StatusCode, e)
		mustf(t, strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer"), "%s: no WWW-Authenticate", name)
	}
	_, err := connectFront(t, f, "not-the-token")
	mustf(t, err != nil, "a client with the wrong token connected")
	mustf(t, anySessions(f) == 0, "a refused request reached the server")

	res, _ := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": "Bearer " + f.cfg.Token})
	mustf(t, res.StatusCode == http.StatusOK, "the right token: %d", res.StatusCode)
}

// sessions counts the front's initialized sessions.
func sessions(f *Front) int {
	n := 0
	for ss := range f.server.Sessions() {
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
	for range f.server.Sessions() {
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
	port := strconv.Itoa(f.port)
	auth := "Bearer " + f.cfg.Token
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
	auth := map[string]string{"Authorization": "Bearer " + f.cfg.Token}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("a", 8192) + `"}}}`
	res, e := post(t, f, strings.NewReader(big), auth)
	mustf(t, res.StatusCode == http.StatusRequestEntityTooLarge && e["code"] == FrontCodeBodyTooLarge, "declared: %d %v", res.StatusCode, e)
	res, _ = post(t, f, io.MultiReader(strings.NewReader(big)), auth) // no length: chunked
	mustf(t, res.StatusCode == http.StatusRequestEntityTooLarge, "chunked: %d", res.StatusCode)
	waitFor(t, "no session left by an oversized request", func() bool { return anySessions(f) == 0 })
}

// Sessions are bounded in number: past MaxSessions a new one is refused
// with 503 and the open ones keep working; ending one makes room. An idle
// session is closed after SessionIdle.
func TestFront_TooManySessionsAreRefused(t *testing.T) {
	h := newHarness(t, nil)
	f := h.front(func(c *FrontConfig) { c.MaxSessions = 2 })
	a, err := connectFront(t, f, f.cfg.Token)
	mustf(t, err == nil, "first: %v", err)
	b, err := connectFront(t, f, f.cfg.Token)
	mustf(t, err == nil, "second: %v", err)
	_, err = connectFront(t, f, f.cfg.Token)
	mustf(t, err != nil, "a third session opened past the bound")
	res, e := post(t, f, strings.NewReader(initBody), map[string]string{"Authorization": "Bearer " + f.cfg.Token})
	mustf(t, res.StatusCode == http.StatusServiceUnavailable && e["code"] == FrontCodeTooManySession, "third: %d %v", res.StatusCode, e)
	_, err = a.ListTools(context.Background(), nil)
	mustf(t, err == nil, "an open session stopped working: %v", err)
	b.Close()
	waitFor(t, "the ended session to close", func() bool { return sessions(f) == 1 })
	c, err := connectFront(t, f, f.cfg.Token)
	mustf(t, err == nil, "no room after a session ended: %v", err)
	c.Close()
	a.Close()

	idle := newHarness(t, nil).front(func(c *FrontConfig) { c.SessionIdle = time.Second })
	s, err := connectFront(t, idle, idle.cfg.Token)
	mustf(t, err == nil, "connect: %v", err)
	defer s.Close()
	waitFor(t, "the idle session to close", func() bool { return sessions(idle) == 0 })
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
