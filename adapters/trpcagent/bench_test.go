package trpcagent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/runner"
	"trpc.group/trpc-go/trpc-agent-go/tool"
	"trpc.group/trpc-go/trpc-agent-go/tool/function"
)

// benchModel asks for calls reads with fresh arguments whenever the last
// message is not a tool message, and otherwise answers "ok": each Run is
// one turn of calls and one answer.
type benchModel struct {
	calls int
	n     atomic.Int64
}

func (m *benchModel) Info() model.Info { return model.Info{Name: "bench"} }

func (m *benchModel) GenerateContent(_ context.Context, req *model.Request) (<-chan *model.Response, error) {
	msg := textTurn("ok")
	if last := req.Messages[len(req.Messages)-1]; last.Role != model.RoleTool {
		msg = callTurn()
		for range m.calls {
			i := m.n.Add(1)
			args, _ := json.Marshal(adaptertest.FetchArgs{I: i}) // an int always encodes
			msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{Type: "function", ID: fmt.Sprintf("b-%d", i),
				Function: model.FunctionDefinitionParam{Name: "fetch", Arguments: args}})
		}
	}
	ch := make(chan *model.Response, 1)
	ch <- &model.Response{Object: model.ObjectTypeChatCompletion, Choices: []model.Choice{{Message: msg}}, Done: true}
	close(ch)
	return ch, nil
}

// benchRunner is a runner over one read tool that takes latency, with the
// gate's callbacks when governed, running a turn's calls in parallel or
// one after another.
func benchRunner(b *testing.B, calls int, latency time.Duration, governed, parallel bool) (runner.Runner, *adaptertest.CountingStore) {
	b.Helper()
	fetch := function.NewFunctionTool(func(_ context.Context, a adaptertest.FetchArgs) (adaptertest.FetchArgs, error) {
		time.Sleep(latency)
		return a, nil
	},
		function.WithName("fetch"), function.WithDescription("Fetches a record."))
	tools := []tool.Tool{fetch}
	opts := []llmagent.Option{llmagent.WithModel(&benchModel{calls: calls}), llmagent.WithTools(tools), llmagent.WithEnableParallelTools(parallel)}
	var counted *adaptertest.CountingStore
	if governed {
		g := adaptertest.GovernRead(b, "fetch", func(cls map[string]agentrt.SideEffect) ([]agentrt.Tool, error) { return Specs(tools, cls, time.Minute) })
		opts = append(opts, Govern(g.Gate, g.Classes, Options{Limits: g.Limits}).AgentOptions()...)
		counted = g.Store
	}
	r := runner.NewRunner("bench", llmagent.New("bench", opts...))
	b.Cleanup(func() { r.Close() })
	return r, counted
}

// benchTurns runs b.N turns in one session and reports the synced commits
// per call of a governed runner.
func benchTurns(b *testing.B, r runner.Runner, counted *adaptertest.CountingStore, calls int) {
	b.Helper()
	adaptertest.Turns(b, counted, calls, func() {
		ch, err := r.Run(context.Background(), "u", "s", model.NewUserMessage("go"))
		if err != nil {
			b.Fatal(err)
		}
		for ev := range ch {
			if ev.Response != nil && ev.Response.Error != nil {
				b.Fatal(ev.Response.Error.Message)
			}
		}
	})
}

// BenchmarkAdapter compares one allowed call through the adapter with the
// framework's direct call (one turn each; the difference is the adapter's
// cost), measures the commit floor in the same run, and compares a turn
// of 8 allowed calls run in parallel (llmagent.WithEnableParallelTools)
// with the same 8 run one after another, each taking latency as a remote
// read would.
func BenchmarkAdapter(b *testing.B) {
	b.Run("call=direct", func(b *testing.B) { r, c := benchRunner(b, 1, 0, false, true); benchTurns(b, r, c, 1) })
	b.Run("call=governed", func(b *testing.B) { r, c := benchRunner(b, 1, 0, true, true); benchTurns(b, r, c, 1) })
	b.Run("commit-floor", adaptertest.CommitFloor)
	for _, lat := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(fmt.Sprintf("turn=8-sequential/latency=%s", lat), func(b *testing.B) { r, c := benchRunner(b, 8, lat, true, false); benchTurns(b, r, c, 8) })
		b.Run(fmt.Sprintf("turn=8-parallel/latency=%s", lat), func(b *testing.B) { r, c := benchRunner(b, 8, lat, true, true); benchTurns(b, r, c, 8) })
	}
}
