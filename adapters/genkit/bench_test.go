package genkit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// benchGenerate measures one Generate whose model asks for calls echo
// calls, in one turn (parallel) or one turn each (sequential), then
// answers; governed puts the adapter on a fresh SQLite file.
func benchGenerate(b *testing.B, governed, parallel bool, calls int) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	echo := genkit.DefineTool(g, "echo", "Echoes.", func(_ *ai.ToolContext, a adaptertest.ReadArgs) (string, error) { return a.Name, nil })
	var n atomic.Int64 // distinct arguments, so the loop detector sees no repetition
	var script []*ai.Message
	model := genkit.DefineModelAction(g, "scripted/bench", &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true, Tools: true}},
		func(_ context.Context, req *ai.ModelRequest, _ struct{}, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			next := script[0]
			script = script[1:]
			return &ai.ModelResponse{Message: next, FinishReason: ai.FinishReasonStop, Request: req}, nil
		})
	call := func() *ai.ToolRequest {
		i := n.Add(1)
		return req(fmt.Sprintf("c%d", i), "echo", map[string]any{"name": fmt.Sprintf("n%d", i)})
	}
	opts := []ai.GenerateOption{ai.WithModel(model), ai.WithTools(echo), ai.WithPrompt("echo")}
	var cs *adaptertest.CountingStore
	if governed {
		gv := adaptertest.GovernRead(b, "echo", func(cls map[string]agentrt.SideEffect) ([]agentrt.Tool, error) { return Specs(cls, echo), nil })
		opts = append(opts, ai.WithUse(Middleware(gv.Gate, gv.Classes, Options{Limits: gv.Limits})))
		ctx = WithRun(ctx, "bench")
		cs = gv.Store
	}
	one := func() {
		script = script[:0]
		if parallel {
			turn := &ai.Message{Role: ai.RoleModel}
			for range calls {
				turn.Content = append(turn.Content, ai.NewToolRequestPart(call()))
			}
			script = append(script, turn)
		} else {
			for range calls {
				script = append(script, callTurn(call()))
			}
		}
		script = append(script, ai.NewModelTextMessage("done"))
		if _, err := genkit.Generate(ctx, g, opts...); err != nil {
			b.Fatal(err)
		}
	}
	adaptertest.Turns(b, cs, calls, one)
}

// BenchmarkMiddleware: a Generate with one allowed call through the
// adapter against the same Generate with no middleware, the commit floor
// on the same driver in the same run, and 8 allowed calls in one turn
// against 8 turns of one call (ns/op is per Generate).
func BenchmarkMiddleware(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchGenerate(b, false, true, 1) })
	b.Run("governed", func(b *testing.B) { benchGenerate(b, true, true, 1) })
	b.Run("floor", adaptertest.CommitFloor)

	b.Run("calls8/one-turn", func(b *testing.B) { benchGenerate(b, true, true, 8) })
	b.Run("calls8/eight-turns", func(b *testing.B) { benchGenerate(b, true, false, 8) })
}
