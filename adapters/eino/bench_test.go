package eino

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// benchNode is a real ToolsNode over a read-only echo tool, governed by a
// fresh middleware on a fresh SQLite file when governed is true.
func benchNode(b *testing.B, governed, sequential bool) (*compose.ToolsNode, *adaptertest.CountingStore) {
	echo, err := utils.InferTool("echo", "Echoes.", func(_ context.Context, a adaptertest.ReadArgs) (string, error) { return a.Name, nil })
	if err != nil {
		b.Fatal(err)
	}
	cfg := &compose.ToolsNodeConfig{Tools: []tool.BaseTool{echo}, ExecuteSequentially: sequential}
	var cs *adaptertest.CountingStore
	if governed {
		g := adaptertest.GovernRead(b, "echo", func(cls map[string]agentrt.SideEffect) ([]agentrt.Tool, error) {
			return Tools(context.Background(), cfg.Tools, cls, time.Minute)
		})
		cfg.ToolCallMiddlewares = []compose.ToolMiddleware{Middleware(g.Gate, g.Classes, Options{Limits: g.Limits})}
		cs = g.Store
	}
	node, err := compose.NewToolNode(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return node, cs
}

// turn is an assistant message with calls distinct echo calls (distinct,
// so the loop detector sees no repetition).
func turn(i, calls int) *schema.Message {
	tc := make([]schema.ToolCall, calls)
	for k := range tc {
		tc[k] = call(fmt.Sprintf("c%d-%d", i, k), "echo", fmt.Sprintf(`{"name":"n%d-%d"}`, i, k))
	}
	return callTurn(tc...)
}

func benchTurns(b *testing.B, governed, sequential bool, calls int) {
	node, cs := benchNode(b, governed, sequential)
	ctx := WithRunID(context.Background(), "bench")
	i := -1 // the untimed turn, which begins the run, is turn -1
	adaptertest.Turns(b, cs, calls, func() {
		out, err := node.Invoke(ctx, turn(i, calls))
		if err != nil || len(out) != calls {
			b.Fatalf("turn %d: %d messages, %v", i, len(out), err)
		}
		i++
	})
}

// BenchmarkMiddleware: one allowed call through the middleware against the same
// ToolsNode call with no middleware, the commit floor on the same driver
// in the same run, and a turn of 8 allowed calls in parallel against 8 in
// sequence (ns/op is per turn).
func BenchmarkMiddleware(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchTurns(b, false, false, 1) })
	b.Run("governed", func(b *testing.B) { benchTurns(b, true, false, 1) })
	b.Run("floor", adaptertest.CommitFloor)
	b.Run("turn8/parallel", func(b *testing.B) { benchTurns(b, true, false, 8) })
	b.Run("turn8/sequential", func(b *testing.B) { benchTurns(b, true, true, 8) })
}
