package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	agentotel "github.com/agentrt/agentrt/export/otel"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// world is a runs database written by real drivers on a fake clock.
type world struct {
	st    *sqlite.Store
	path  string
	clock *enginekit.TickingClock
	ids   *enginekit.IDCounter
}

func newWorld(t testing.TB) *world {
	t.Helper()
	st, path := testrig.DB(t)
	return &world{st: st, path: path, clock: enginekit.TickFrom(time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC), time.Second),
		ids: enginekit.CountIDs("id%04d")}
}

var tools = []agentrt.Tool{
	agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "read", Description: "read a file", SideEffect: agentrt.ReadOnly,
		Timeout: 5 * time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Content: json.RawMessage(`{"text":"hello"}`), Summary: "read 5 bytes"}, nil
		}},
	agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "write", Description: "write a file", SideEffect: agentrt.LocalMutation,
		Timeout: 5 * time.Second, InputSchema: json.RawMessage(`{"type":"object"}`)},
		Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
			return agentrt.ToolResult{Summary: "wrote"}, nil
		}},
}

// policy allows reads, asks about writes, and names itself.
type policy struct{ agentrt.SideEffectPolicy }

func (policy) PolicyID() string { return "policy-v7" }

func (w *world) driver(t testing.TB, agent agentrt.Agent, model *agentrt.ModelConfig) *agentrt.Driver {
	t.Helper()
	return w.driverOn(t, w.st, agent, model)
}

func (w *world) driverOn(t testing.TB, st agentrt.Store, agent agentrt.Agent, model *agentrt.ModelConfig) *agentrt.Driver {
	t.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Tools:  tools,
			Model:  model,
			Policy: policy{agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.LocalMutation: agentrt.RequireApproval}},
			Now:    w.clock.Now,
			NewID:  w.ids.ID,
		},
		Agent: agent,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// twoSteps runs read then complete.
func (w *world) twoSteps(t testing.TB) agentrt.Run {
	t.Helper()
	r, err := w.driver(t, &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("read", `{"path":"notes.txt"}`, "look first"),
		scripted.Complete(`{"summary":"hello"}`),
	}}, nil).Start(context.Background(), "summarise notes.txt", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// approved runs a write that waits for approval, approves it and resumes.
func (w *world) approved(t testing.TB) agentrt.Run {
	t.Helper()
	ctx := context.Background()
	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("write", `{"path":"out.txt"}`, "save it"),
		scripted.Complete(`{}`),
	}}
	d := w.driver(t, agent, nil)
	r, err := d.Start(ctx, "write out.txt", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	as, err := w.st.ListApprovals(ctx, r.ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("approvals %v %v", as, err)
	}
	if err := (agentrt.Operator{Store: w.st, Now: w.clock.Now}).ApproveShown(ctx, r.ID, as[0].ID, as[0].Hash, "alice", "fine"); err != nil {
		t.Fatal(err)
	}
	if r, err = d.Resume(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	return r
}

// providerModel is a model that names its provider; GenerateFunc answers.
type providerModel struct {
	GenerateFunc func(n int, req agentrt.ModelRequest) (agentrt.ModelResponse, error)
	mu           sync.Mutex
	n            int
}

func (m *providerModel) Name() string     { return "gpt-test" }
func (m *providerModel) Provider() string { return "openai" }
func (m *providerModel) Generate(_ context.Context, req agentrt.ModelRequest) (agentrt.ModelResponse, error) {
	m.mu.Lock()
	m.n++
	n := m.n
	m.mu.Unlock()
	return m.GenerateFunc(n, req)
}

// modelAgent asks the model on its first step (twice: the first attempt
// fails with errText), then plays decisions.
type modelAgent struct {
	then []agentrt.Decision
}

func (a *modelAgent) Decide(ctx context.Context, in agentrt.StepInput) (agentrt.Decision, error) {
	n := in.Steps.Len()
	if n == 0 {
		req := agentrt.ModelRequest{System: "Be brief.", MaxOutputTokens: 64,
			Messages: []agentrt.Message{{Role: agentrt.RoleUser, Content: []agentrt.ContentBlock{{Type: agentrt.BlockText, Text: "hi"}}}}}
		if _, err := in.Model.Generate(ctx, req); err == nil {
			return agentrt.Decision{}, errors.New("the first attempt should have failed")
		}
		if _, err := in.Model.Generate(ctx, req); err != nil {
			return agentrt.Decision{}, err
		}
	}
	if n >= len(a.then) {
		return agentrt.Decision{}, errors.New("script exhausted")
	}
	return a.then[n], nil
}

func (w *world) withModel(t testing.TB, errText string, then ...agentrt.Decision) agentrt.Run {
	t.Helper()
	m := &providerModel{GenerateFunc: func(n int, _ agentrt.ModelRequest) (agentrt.ModelResponse, error) {
		if n == 1 {
			return agentrt.ModelResponse{}, errors.New(errText)
		}
		return agentrt.ModelResponse{Text: "ok", StopReason: agentrt.StopEndTurn, Usage: agentrt.Usage{InputTokens: 12, OutputTokens: 5}}, nil
	}}
	l := agentrt.DefaultLimits()
	r, err := w.driver(t, &modelAgent{then: then}, &agentrt.ModelConfig{Model: m}).Start(context.Background(), "ask the model", l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exportAll follows the database read-only into a new Exporter on tp.
func exportAll(t testing.TB, w *world, x *agentotel.Exporter, cur export.Cursor) {
	t.Helper()
	ro, err := sqlite.OpenExisting(w.path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	f := export.Follower{Store: ro, Cursor: cur, Once: true}
	if err := f.Follow(context.Background(), x.Sink(context.Background())); err != nil {
		t.Fatal(err)
	}
}

// exportedSpans exports the whole database once through an Exporter made
// from cfg, sending to a new receiver, and returns the spans it received.
func exportedSpans(t testing.TB, w *world, cfg agentotel.Config) []span {
	t.Helper()
	rcv := newReceiver(t)
	tp := rcv.provider(t)
	cfg.TracerProvider = tp
	exportAll(t, w, exporter(t, w, cfg), nil)
	flush(t, tp)
	return rcv.got()
}

func exporter(t testing.TB, w *world, tp agentotel.Config) *agentotel.Exporter {
	t.Helper()
	if tp.Store == nil {
		ro, err := sqlite.OpenExisting(w.path, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ro.Close() })
		tp.Store = ro
	}
	x, err := agentotel.NewExporter(tp)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// exportRestarting runs f once for each seq in ats, each time with a new
// exporter on tp (as a process restarted there would be) that handles the
// events up to that seq.
func exportRestarting(t testing.TB, w *world, tp *sdktrace.TracerProvider, f export.Follower, ats ...int64) {
	t.Helper()
	stop := errors.New("restart")
	for _, at := range ats {
		x := exporter(t, w, agentotel.Config{TracerProvider: tp})
		restarted := f // a fresh Follower each time, on the same cursor
		err := restarted.Follow(context.Background(), func(e agentrt.Event) error {
			if e.Seq > at {
				return stop
			}
			return x.Handle(context.Background(), e)
		})
		if err != nil && !errors.Is(err, stop) {
			t.Fatal(err)
		}
	}
}
