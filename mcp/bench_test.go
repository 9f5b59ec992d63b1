package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// BenchmarkLoad loads a 1,000-tool listing (ten pages of a hundred) over
// the in-memory transport: connect, list, and every check of every tool.
func BenchmarkLoad(b *testing.B) {
	page := func(n int) string {
		var tools []string
		for i := range 100 {
			tools = append(tools, fmt.Sprintf(`{"name":"t%d","description":"Tool %d reads a thing.","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"]},"annotations":{"readOnlyHint":true}}`, n*100+i, n*100+i))
		}
		next := ""
		if n < 9 {
			next = fmt.Sprintf(`,"nextCursor":"p%d"`, n+1)
		}
		return `{"tools":[` + strings.Join(tools, ",") + `]` + next + `}`
	}
	srv := rawServer("bench", func(method string, p json.RawMessage) (string, bool) {
		if method != "tools/list" {
			return "", false
		}
		var params struct{ Cursor string }
		_ = json.Unmarshal(p, &params)
		n := 0
		fmt.Sscanf(params.Cursor, "p%d", &n)
		return page(n), true
	})
	m, err := Pin(context.Background(), srv)
	if err != nil || len(m.Tools) != 1000 {
		b.Fatalf("Pin: %d tools, %v", len(m.Tools), err)
	}
	rules := Rules{}
	for name := range m.Tools {
		rules[name] = Rule{SideEffect: agentrt.ReadOnly}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tools, rep, err := Load(context.Background(), srv, m, rules)
		if err != nil || len(tools) != 1000 {
			b.Fatalf("Load: %d tools, %v", len(tools), err)
		}
		rep.Connection.Close()
	}
}

// BenchmarkCall calls a read-only tool over the in-memory transport with
// a 4 KiB result. "roundtrip" is the whole call; "mapping" is only this
// package's share of it (reading the raw result, refusing what the core
// would refuse, canonical re-encoding and capping), the overhead a call
// adds beyond the transport and the durable step.
func BenchmarkCall(b *testing.B) {
	text := strings.Repeat("0123456789abcdef", 256) // 4 KiB
	srv := sdkServer("bench", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
			})
	})
	m, err := Pin(context.Background(), srv)
	if err != nil {
		b.Fatal(err)
	}
	tools, rep, err := Load(context.Background(), srv, m, Rules{"read": {SideEffect: agentrt.ReadOnly}})
	if err != nil {
		b.Fatal(err)
	}
	defer rep.Connection.Close()
	call := agentrt.ToolCall{Args: json.RawMessage(`{"path":"a.txt"}`)}
	b.Run("roundtrip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := tools[0].Call(context.Background(), call)
			if err != nil || len(res.Content) < 4096 {
				b.Fatalf("call: %d bytes, %v", len(res.Content), err)
			}
		}
	})
	raw, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	structured, _ := json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]string{"text": text}})
	t := tools[0].(*tool)
	cases := map[string]struct {
		raw []byte
		res *sdk.CallToolResult
	}{
		"mapping/text":       {raw, &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}},
		"mapping/structured": {structured, &sdk.CallToolResult{StructuredContent: map[string]any{"text": text}}},
	}
	for name, c := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cr, err := readResult(c.raw, c.res)
				if err != nil {
					b.Fatal(err)
				}
				res, err := t.result(cr)
				if err != nil || len(res.Content) < 4096 {
					b.Fatalf("%d bytes, %v", len(res.Content), err)
				}
				if _, err := t.arguments(call.Args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
