package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// The test binary doubles as a stdio MCP server when AGENTRT_MCP_TEST_SERVER
// names a mode, so the process tests run a real child process.
func TestMain(m *testing.M) {
	switch os.Getenv("AGENTRT_MCP_TEST_SERVER") {
	case "":
		os.Exit(m.Run())
	case "grandparent":
		// Start a grandchild that would outlive a server killed alone, say
		// its pid on stderr, then serve.
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), "AGENTRT_MCP_TEST_SERVER=grandchild")
		gc.Stderr = os.Stderr // holds the client's stderr pipe open while it lives
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "grandchild:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "grandchild pid %d\n", gc.Process.Pid)
		serveStdio()
	case "grandchild":
		select {} // until killed
	case "die-on-list":
		s := sdk.NewServer(&sdk.Implementation{Name: "dies", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, okHandler)
		s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if method == "tools/list" {
					fmt.Fprintln(os.Stderr, "the server fell over: listing is broken")
					os.Exit(3)
				}
				return next(ctx, method, req)
			}
		})
		_ = s.Run(context.Background(), &sdk.StdioTransport{})
		os.Exit(0)
	default:
		os.Exit(2)
	}
}

func serveStdio() {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echo.", InputSchema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, okHandler)
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0)
}

func okHandler(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
}

// selfServer is a Server that runs this test binary in mode.
func selfServer(t *testing.T, mode string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: "self", Command: []string{exe}, Env: []string{"AGENTRT_MCP_TEST_SERVER=" + mode},
		ConnectTimeout: 20 * time.Second, DefaultTimeout: 5 * time.Second}
}

// sdkServer is a Server backed by an SDK server in this process, built
// fresh by build for every connection (Pin and Load each connect).
func sdkServer(name string, build func(*sdk.Server)) Server {
	return Server{Name: name, DefaultTimeout: 5 * time.Second, ConnectTimeout: 10 * time.Second,
		transport: func() sdk.Transport {
			ct, st := sdk.NewInMemoryTransports()
			s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
			build(s)
			if _, err := s.Connect(context.Background(), st, nil); err != nil {
				panic(err)
			}
			return ct
		}}
}

// legacySDKServer is sdkServer limited to the 2025-11-25 revision, for
// what only that revision has: requests from server to client, and list
// changes sent to a session without a subscription.
func legacySDKServer(name string, build func(*sdk.Server)) Server {
	srv := sdkServer(name, build)
	srv.transport = func() sdk.Transport {
		ct, st := sdk.NewInMemoryTransports()
		s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: []string{legacyProtocolVersion}})
		build(s)
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			panic(err)
		}
		return ct
	}
	return srv
}

// rawHandler answers one request of a raw server: the result's JSON text,
// "ERROR <json string>" for an error response, or answer false to never
// answer. initialize is answered for it unless it returns "hang".
type rawHandler func(method string, params json.RawMessage) (result string, answer bool)

// rawServer is a Server whose other end is raw JSON-RPC lines this test
// writes by hand, so the bytes are exactly what a hostile server would
// send. initialize is answered unless handle handles it.
func rawServer(name string, handle rawHandler) Server {
	return Server{Name: name, DefaultTimeout: 5 * time.Second, ConnectTimeout: 10 * time.Second,
		transport: func() sdk.Transport {
			client, server := net.Pipe()
			go serveRaw(server, handle)
			return &sdk.IOTransport{Reader: client, Writer: client}
		}}
}

// rawConn lets a raw handler push notifications.
type rawConn struct {
	mu sync.Mutex
	w  net.Conn
}

func (c *rawConn) send(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.w.Write([]byte(line + "\n"))
}

func serveRaw(conn net.Conn, handle rawHandler) {
	defer conn.Close()
	rc := &rawConn{w: conn}
	sc := bufio.NewScanner(conn)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification or a response
		}
		res, ok := handle(req.Method, req.Params)
		if !ok && req.Method == "initialize" && res != "hang" {
			res, ok = initResult, true
		}
		if !ok && req.Method == "server/discover" {
			// A server of the 2025-11-25 revision, as real ones answer a
			// method they do not know.
			go rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID))
			continue
		}
		if !ok {
			continue
		}
		if msg, isErr := strings.CutPrefix(res, "ERROR "); isErr {
			go rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, req.ID, msg))
			continue
		}
		go rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, res))
	}
}

const initResult = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}`

// listOnly answers tools/list with page (one page) and calls with call.
func listOnly(page string) rawHandler {
	return func(method string, _ json.RawMessage) (string, bool) {
		switch method {
		case "tools/list":
			return page, true
		case "tools/call":
			return `{"content":[{"type":"text","text":"called"}]}`, true
		}
		return "", false
	}
}

// servers is where the pinned npm servers are installed.
func serversDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "servers")
}

// npmEntry is the entry point of a pinned npm server. A missing install
// fails, never skips: CI installs them, and so does `make mcp-servers`.
func npmEntry(t testing.TB, pkg string) string {
	t.Helper()
	entry := filepath.Join(serversDir(t), "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the pinned MCP server %s is not installed (%v): run `make mcp-servers`, which runs npm ci --ignore-scripts in mcp/testdata/servers", pkg, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH: the pinned MCP servers run with node: %v", err)
	}
	return entry
}

// filesystemServer is the real filesystem server on dir.
func filesystemServer(t testing.TB, dir string) Server {
	return Server{Name: "fs", Command: []string{"node", npmEntry(t, "server-filesystem"), dir},
		ConnectTimeout: 30 * time.Second, DefaultTimeout: 10 * time.Second}
}

// everythingServer is the real everything server over stdio.
func everythingServer(t testing.TB) Server {
	return Server{Name: "everything", Command: []string{"node", npmEntry(t, "server-everything"), "stdio"},
		ConnectTimeout: 30 * time.Second, DefaultTimeout: 10 * time.Second}
}

func pin(t *testing.T, srv Server) *Manifest {
	t.Helper()
	m, err := Pin(context.Background(), srv)
	if err != nil {
		t.Fatalf("Pin: %v", err)
	}
	return m
}

func load(t *testing.T, srv Server, m *Manifest, rules Rules) ([]agentrt.Tool, *Report) {
	t.Helper()
	tools, rep, err := Load(context.Background(), srv, m, rules)
	if err != nil {
		t.Fatalf("Load: %v\n%v", err, rep)
	}
	t.Cleanup(func() { rep.Connection.Close() })
	return tools, rep
}

func refusal(rep *Report, tool string) string {
	if rep == nil {
		return ""
	}
	for _, r := range rep.Refused {
		if r.Tool == tool {
			return r.Reason
		}
	}
	return ""
}

func registered(rep *Report, tool string) bool {
	if rep == nil {
		return false
	}
	for _, r := range rep.Registered {
		if r.Tool == tool {
			return true
		}
	}
	return false
}

func toolNamed(tools []agentrt.Tool, name string) agentrt.Tool {
	for _, t := range tools {
		if t.Spec().Name == name {
			return t
		}
	}
	return nil
}

func must(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
