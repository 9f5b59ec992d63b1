package adk

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// benchLLM asks for calls reads with fresh arguments whenever the last
// content is not a tool response, and otherwise answers "ok": each Run is
// one turn of calls and one answer.
type benchLLM struct {
	calls int
	n     atomic.Int64
}

func (m *benchLLM) Name() string { return "bench" }

func (m *benchLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		if len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil {
			yield(&model.LLMResponse{Content: textTurn("ok"), TurnComplete: true}, nil)
			return
		}
		c := &genai.Content{Role: genai.RoleModel}
		for range m.calls {
			i := m.n.Add(1)
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{
				ID: fmt.Sprintf("b-%d", i), Name: "fetch", Args: map[string]any{"i": i}}})
		}
		yield(&model.LLMResponse{Content: c, TurnComplete: true}, nil)
	}
}

// benchRunner is an ADK runner over one read tool that takes latency, with
// the gate's callbacks when governed; it returns the session to run in.
func benchRunner(b *testing.B, calls int, latency time.Duration, governed bool) (*runner.Runner, *adaptertest.CountingStore) {
	b.Helper()
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch", Description: "Fetches a record."},
		func(_ agent.Context, a adaptertest.FetchArgs) (adaptertest.FetchArgs, error) {
			time.Sleep(latency)
			return a, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	tools := []tool.Tool{fetch}
	var counted *adaptertest.CountingStore
	cfg := llmagent.Config{Name: "bench", Model: &benchLLM{calls: calls}, Tools: tools}
	if governed {
		g := adaptertest.GovernRead(b, "fetch", func(cls map[string]agentrt.SideEffect) ([]agentrt.Tool, error) { return Specs(tools, cls, time.Minute) })
		Govern(g.Gate, g.Classes, Options{Limits: g.Limits}).Apply(&cfg)
		counted = g.Store
	}
	ag, err := llmagent.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sessions := session.InMemoryService()
	if _, err := sessions.Create(context.Background(), &session.CreateRequest{AppName: "bench", UserID: "u", SessionID: "s"}); err != nil {
		b.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "bench", Agent: ag, SessionService: sessions})
	if err != nil {
		b.Fatal(err)
	}
	return r, counted
}

// benchTurns runs b.N turns in one session, in ctx, and reports the
// synced commits per call of a governed runner.
func benchTurns(b *testing.B, ctx context.Context, r *runner.Runner, counted *adaptertest.CountingStore, calls int) {
	b.Helper()
	adaptertest.Turns(b, counted, calls, func() {
		for _, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAdapter compares one allowed call through the adapter with
// ADK's direct call (one turn each; the difference is the adapter's cost),
// measures the commit floor in the same run, and compares a turn of 8
// parallel allowed calls with the same 8 calls run one after another, each
// call taking latency as a remote read would.
func BenchmarkAdapter(b *testing.B) {
	b.Run("call=direct", func(b *testing.B) { r, c := benchRunner(b, 1, 0, false); benchTurns(b, context.Background(), r, c, 1) })
	b.Run("call=governed", func(b *testing.B) { r, c := benchRunner(b, 1, 0, true); benchTurns(b, context.Background(), r, c, 1) })
	b.Run("commit-floor", adaptertest.CommitFloor)
	sequential := platform.WithTaskRunner(context.Background(), func(ctx context.Context, tasks []func(context.Context)) {
		for _, t := range tasks {
			t(ctx)
		}
	})
	for _, lat := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(fmt.Sprintf("turn=8-sequential/latency=%s", lat), func(b *testing.B) { r, c := benchRunner(b, 8, lat, true); benchTurns(b, sequential, r, c, 8) })
		b.Run(fmt.Sprintf("turn=8-parallel/latency=%s", lat), func(b *testing.B) { r, c := benchRunner(b, 8, lat, true); benchTurns(b, context.Background(), r, c, 8) })
	}
}
