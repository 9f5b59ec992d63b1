package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentrt/agentrt/proxy/internal/index"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/sqlite"
)

// testUpstream is a real MCP server in this process, reached over streamable
// HTTP on loopback: its tools are Go functions that count their effects.
type testUpstream struct {
	srv *httptest.Server
	url string
	// sseURL reaches the same server over the legacy SSE transport.
	sseURL string
	// server is the MCP server itself, for a test to add prompts or
	// resources to.
	server *sdk.Server

	mu      sync.Mutex
	effects []string // one entry per write that took effect: path=content
	// hang makes a write take effect and then never answer.
	hang atomic.Bool
	// gate, when set, makes a write with mode "wait" say it started and
	// wait for release.
	started chan string
	release chan struct{}
	// failText is what a write with mode "error" reports.
	failText string
}

const (
	readSchema  = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
	writeSchema = `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"mode":{"type":"string"},"owner":{"type":"string"}},"required":["path"]}`
)

func newTestUpstream(t testing.TB) *testUpstream {
	u := &testUpstream{started: make(chan string, 16), release: make(chan struct{}), failText: "the disk is full"}
	build := func() *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "read", Description: "Reads a file.", InputSchema: json.RawMessage(readSchema)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var a struct{ Path string }
				_ = json.Unmarshal(req.Params.Arguments, &a)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "content of " + a.Path}}}, nil
			})
		s.AddTool(&sdk.Tool{Name: "big", Description: "Returns a lot.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 1<<20)}}}, nil
			})
		s.AddTool(&sdk.Tool{Name: "write", Description: "Writes a file.", InputSchema: json.RawMessage(writeSchema)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var a struct{ Path, Content, Mode, Owner string }
				_ = json.Unmarshal(req.Params.Arguments, &a)
				switch a.Mode {
				case "error":
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: u.failText}}, IsError: true}, nil
				case "refused":
					u.effect(a.Path, a.Content)
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}, StructuredContent: json.RawMessage(`{"k":1,"k":2}`)}, nil
				case "wait":
					u.started <- a.Path
					<-u.release
				}
				u.effect(a.Path, a.Content+owner(a.Owner))
				if u.hang.Load() {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "wrote " + a.Path}}}, nil
			})
		return s
	}
	srv := build()
	u.server = srv
	u.srv = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	u.url = u.srv.URL + "/mcp"
	t.Cleanup(u.srv.Close)
	sse := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	u.sseURL = sse.URL + "/sse"
	t.Cleanup(sse.Close)
	return u
}

func owner(o string) string {
	if o == "" {
		return ""
	}
	return " by " + o
}

func (u *testUpstream) effect(path, content string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.effects = append(u.effects, path+"="+content)
}

func (u *testUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.effects)
}

func (u *testUpstream) effectsNow() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.effects...)
}

// harness is a proxy on an upstream, and a host connected to it.
type harness struct {
	t      testing.TB
	dir    string
	cfg    *Config
	cfgDoc map[string]any
	up     *testUpstream
	p      *Proxy
	cs     *sdk.ClientSession
	stderr *syncBuffer
	clock  *enginekit.FakeClock // moved by hand
	events chan agentrt.Event
	texts  []string // every text the host was shown
	cancel context.CancelFunc
	served chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// baseConfig is the harness's configuration: read allowed, write asks for
// approval, hold off (answers at once).
func baseConfig(u *testUpstream) map[string]any {
	return map[string]any{
		"database": "runs.db",
		"session":  "test",
		"hold":     "0s",
		"policy":   map[string]any{"local_mutation": "require_approval"},
		"servers": []any{map[string]any{
			"name": "up", "endpoint": u.url, "manifest": "up.manifest.json", "default_timeout": "5s",
			"rules": map[string]any{
				"read":  map[string]any{"side_effect": "read_only"},
				"write": map[string]any{"side_effect": "local_mutation"},
			},
		}},
	}
}

// rules returns the harness configuration's rule for tool, to edit.
func rules(doc map[string]any, tool string) map[string]any {
	return doc["servers"].([]any)[0].(map[string]any)["rules"].(map[string]any)[tool].(map[string]any)
}

func newHarness(t testing.TB, edit func(doc map[string]any)) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), up: newTestUpstream(t), stderr: &syncBuffer{},
		clock: enginekit.ClockAt(time.Now().UTC()), events: make(chan agentrt.Event, 4096)}
	h.cfgDoc = baseConfig(h.up)
	if edit != nil {
		edit(h.cfgDoc)
	}
	h.writeConfig()
	h.pin()
	h.start()
	return h
}

func (h *harness) writeConfig() {
	h.t.Helper()
	b, err := json.MarshalIndent(h.cfgDoc, "", "  ")
	if err != nil {
		h.t.Fatal(err)
	}
	path := writeFile(h.t, filepath.Join(h.dir, "proxy.json"), string(b))
	cfg, err := LoadConfig(path)
	if err != nil {
		h.t.Fatalf("config: %v\n%s", err, b)
	}
	h.cfg = cfg
}

func (h *harness) pin() {
	h.t.Helper()
	for _, s := range h.cfg.Servers {
		srv, err := s.Dial(DialOptions{})
		if err != nil {
			h.t.Fatalf("pin: %v", err)
		}
		m, err := mcp.Pin(context.Background(), srv)
		if err != nil {
			h.t.Fatalf("pin: %v", err)
		}
		if err := mcp.WriteManifest(s.Manifest, m); err != nil {
			h.t.Fatal(err)
		}
	}
}

// start opens the proxy and connects a host to it over in-memory
// transports.
func (h *harness) start() {
	h.t.Helper()
	p, err := New(context.Background(), h.cfg, Options{Stderr: h.stderr, Now: h.clock.Now, PollInterval: 2 * time.Millisecond,
		ProgressInterval: 20 * time.Millisecond, Observer: func(e agentrt.Event) {
			select {
			case h.events <- e:
			default:
			}
		}})
	if err != nil {
		h.t.Fatalf("New: %v\nstderr: %s", err, h.stderr)
	}
	h.p = p
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.served = make(chan error, 1)
	go func() { h.served <- p.Serve(ctx, st) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			h.progress(req.Params.Message)
		}})
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.cs = cs
	h.t.Cleanup(h.stop)
}

var progressSeen = make(chan string, 64)

func (h *harness) progress(msg string) {
	select {
	case progressSeen <- msg:
	default:
	}
}

// stop disconnects the host and closes the proxy, as a clean exit would.
func (h *harness) stop() {
	if h.p == nil {
		return
	}
	h.cs.Close()
	h.cancel()
	<-h.served
	h.p.Close()
	h.p = nil
}

// restart stops the proxy and starts a new one on the same files, after
// edit changes the configuration.
func (h *harness) restart(edit func(doc map[string]any)) {
	h.t.Helper()
	h.stop()
	if edit != nil {
		edit(h.cfgDoc)
		h.writeConfig()
	}
	h.start()
}

// call makes one host call and returns the text it was shown.
func (h *harness) call(tool string, args string) *sdk.CallToolResult {
	h.t.Helper()
	return h.callCtx(context.Background(), tool, args, nil)
}

func (h *harness) callCtx(ctx context.Context, tool string, args string, meta sdk.Meta) *sdk.CallToolResult {
	h.t.Helper()
	params := &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
	if meta != nil {
		params.Meta = meta
	}
	res, err := h.cs.CallTool(ctx, params)
	if err != nil {
		h.t.Fatalf("call %s %s: %v", tool, args, err)
	}
	h.texts = append(h.texts, text(res))
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// expect calls and checks the answer starts with want ("" for a result
// that ran), returning the text.
func (h *harness) expect(want Status, tool, args string) string {
	h.t.Helper()
	res := h.call(tool, args)
	got := text(res)
	if want == "" {
		if res.IsError || startsWithStatus(got) {
			h.t.Fatalf("call %s %s: got %q, want the server's result", tool, args, got)
		}
		return got
	}
	if !strings.HasPrefix(got, string(want)+":") {
		h.t.Fatalf("call %s %s: got %q, want %s", tool, args, got, want)
	}
	if res.IsError != want.IsError() {
		h.t.Fatalf("call %s %s: isError %v for %s", tool, args, res.IsError, want)
	}
	return got
}

func startsWithStatus(s string) bool {
	for _, st := range []Status{StatusPendingApproval, StatusInProgress, StatusDenied, StatusInvalid, StatusRejected, StatusExpired,
		StatusDuplicate, StatusBlocked, StatusUnknownOutcome, StatusFailed, StatusUnrecorded, StatusUnavailable} {
		if strings.HasPrefix(s, string(st)+":") {
			return true
		}
	}
	return false
}

// operator opens the database as agentrt does, a handle of its own.
func (h *harness) operator() agentrt.Store {
	h.t.Helper()
	st, err := sqlite.OpenExisting(h.cfg.Database, false)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { st.Close() })
	return st
}

// pending lists every pending approval in the database.
func (h *harness) pending() []agentrt.Approval {
	h.t.Helper()
	return pendingOf(h.t, h.p.Store(), "")
}

// pendingOf lists the pending approvals in st, of kind or, when kind is
// "", of every kind, as an operator's front end reads them.
func pendingOf(t testing.TB, st agentrt.Store, kind string) []agentrt.Approval {
	t.Helper()
	runs, err := st.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []agentrt.Approval
	for _, r := range runs {
		as, err := st.ListApprovals(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.Status == agentrt.ApprovalPending && (kind == "" || a.Kind == kind) {
				out = append(out, a)
			}
		}
	}
	return out
}

// readStore opens a runs database read-only, as agentrt does; the
// caller closes it.
func readStore(t testing.TB, db string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.OpenExisting(db, true)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// onlyPending is the one pending approval, of kind.
func (h *harness) onlyPending(kind string) agentrt.Approval {
	h.t.Helper()
	ps := h.pending()
	if len(ps) != 1 || (kind != "" && ps[0].Kind != kind) {
		h.t.Fatalf("pending approvals: %+v, want one of kind %q", ps, kind)
	}
	return ps[0]
}

// decide is the one place tests decide: bound to the hash shown, as
// agentrt approve and reject decide, on the harness's clock.
func (h *harness) decide(a agentrt.Approval, approve bool, note string) {
	h.t.Helper()
	decideOn(h.t, h.operator(), h.clock.Now, a, approve, note)
}

func decideOn(t testing.TB, st agentrt.Store, now func() time.Time, a agentrt.Approval, approve bool, note string) {
	t.Helper()
	op := agentrt.Operator{Store: st, Now: now}
	var err error
	if approve {
		err = op.ApproveShown(context.Background(), a.RunID, a.ID, a.Hash, "operator", note)
	} else {
		err = op.RejectShown(context.Background(), a.RunID, a.ID, a.Hash, "operator", note)
	}
	if err != nil {
		t.Fatalf("decide %s: %v", a.ID, err)
	}
}

// waitEvent waits for an event of typ on run (any run when empty).
func (h *harness) waitEvent(typ agentrt.EventType, runID string) agentrt.Event {
	h.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e := <-h.events:
			if e.Type == typ && (runID == "" || e.RunID == runID) {
				return e
			}
		case <-timeout:
			h.t.Fatalf("no %s event for run %q", typ, runID)
		}
	}
}

func (h *harness) rows() []*index.Row {
	h.t.Helper()
	rs, err := h.p.ix.Recent(context.Background(), h.cfg.Session, time.Time{}, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return rs
}

func mustf(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

var _ = os.Getpid
var _ = fmt.Sprintf
