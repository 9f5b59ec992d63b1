package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/otlptest"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector keeps the names of the spans an OTLP/HTTP receiver decodes.
type collector struct {
	mu    sync.Mutex
	names []string
}

func (c *collector) keep(b []byte) error {
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return nil
}

func (c *collector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names...)
}

// agentrt-otel follows a database to the endpoint in
// OTEL_EXPORTER_OTLP_ENDPOINT with a cursor file: the first run exports
// every span and leaves the cursor at the head, a second exports nothing
// more, and bad arguments are usage errors.
func TestAgentrtOtel_ExportsADatabaseToTheEndpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	read := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "read", Description: "read", SideEffect: agentrt.ReadOnly,
		Timeout: time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Summary: "ok"}, nil
		}}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Policy: agentrt.DefaultPolicy(),
			Tools:  []agentrt.Tool{read},
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("read", `{}`, "look"), scripted.Complete(`{}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Start(context.Background(), "goal", agentrt.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	head, _, _ := st.ChainHead(context.Background())
	st.Close()

	c := &collector{}
	srv := otlptest.Start(t, c.keep)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	cursor := filepath.Join(t.TempDir(), "cursor")
	env := func(string) string { return "" }
	var errb bytes.Buffer
	if code := run([]string{"-db", path, "-cursor", cursor, "-once"}, env, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	names := c.got()
	if got := strings.Join(names, ","); !strings.Contains(got, "agentrt.run") || !strings.Contains(got, "execute_tool read") || len(names) != 4 {
		t.Fatalf("exported %v", names)
	}
	if seq, err := (export.FileCursor{Path: cursor}).Load(); err != nil || seq != head {
		t.Fatalf("cursor %d %v, head %d", seq, err, head)
	}
	if code := run([]string{"-db", path, "-cursor", cursor, "-once"}, env, &errb); code != exitOK || len(c.got()) != 4 {
		t.Fatalf("second run: exit %d, %d spans: %s", code, len(c.got()), errb.String())
	}
	for _, args := range [][]string{{"-once"}, {"-db", path, "extra"}, {"-bogus"}} {
		if code := run(args, env, io.Discard); code != exitUsage {
			t.Fatalf("%v: exit %d, want usage", args, code)
		}
	}
}
