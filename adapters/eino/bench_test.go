package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// countingStore counts the write transactions the gate commits.
type countingStore struct {
	*sqlite.Store
	commits atomic.Int64
}

func (c *countingStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	c.commits.Add(1)
	return c.Store.Update(ctx, fn)
}

// Enqueue counts too: the gate opens a step with it (agentrt.Enqueuer).
func (c *countingStore) Enqueue(fn func(agentrt.Tx) error) func() ([]agentrt.Event, error) {
	c.commits.Add(1)
	return c.Store.Enqueue(fn)
}

// benchNode is a real ToolsNode over a read-only echo tool, governed by a
// fresh guard on a fresh SQLite file when governed is true.
func benchNode(b *testing.B, governed, sequential bool) (*compose.ToolsNode, *countingStore) {
	echo, err := utils.InferTool("echo", "Echoes.", func(_ context.Context, a readArgs) (string, error) { return a.Name, nil })
	if err != nil {
		b.Fatal(err)
	}
	cfg := &compose.ToolsNodeConfig{Tools: []tool.BaseTool{echo}, ExecuteSequentially: sequential}
	var cs *countingStore
	if governed {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "runs.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		cs = &countingStore{Store: st}
		cls := map[string]agentrt.SideEffect{"echo": agentrt.ReadOnly}
		specs, err := Tools(context.Background(), cfg.Tools, cls, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: cs, Policy: agentrt.DefaultPolicy(), Tools: specs}})
		if err != nil {
			b.Fatal(err)
		}
		limits := agentrt.FrameworkLimits()
		limits.MaxSteps = 1 << 30
		guard := New(g, cls, Options{Limits: limits})
		b.Cleanup(guard.Close)
		cfg.ToolCallMiddlewares = []compose.ToolMiddleware{guard.Middleware()}
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
	// The run begins outside the timed loop.
	if _, err := node.Invoke(ctx, turn(-1, 1)); err != nil {
		b.Fatal(err)
	}
	var before int64
	if cs != nil {
		before = cs.commits.Load()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := node.Invoke(ctx, turn(i, calls))
		if err != nil || len(out) != calls {
			b.Fatalf("turn %d: %d messages, %v", i, len(out), err)
		}
	}
	b.StopTimer()
	if cs != nil {
		b.ReportMetric(float64(cs.commits.Load()-before)/float64(b.N*calls), "commits/call")
	}
}

// BenchmarkGuard: one allowed call through the guard against the same
// ToolsNode call with no middleware, the commit floor on the same driver
// in the same run, and a turn of 8 allowed calls in parallel against 8 in
// sequence (ns/op is per turn).
func BenchmarkGuard(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchTurns(b, false, false, 1) })
	b.Run("governed", func(b *testing.B) { benchTurns(b, true, false, 1) })
	b.Run("floor", func(b *testing.B) {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "floor.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		ctx := context.Background()
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
			return tx.RunInsert(agentrt.Run{ID: "floor", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: time.Now()})
		}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
				_, err := tx.EventAppend(agentrt.Event{RunID: "floor", At: time.Now(), Type: agentrt.EventStepStarted, Payload: json.RawMessage(`{}`)})
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("turn8/parallel", func(b *testing.B) { benchTurns(b, true, false, 8) })
	b.Run("turn8/sequential", func(b *testing.B) { benchTurns(b, true, true, 8) })
}
