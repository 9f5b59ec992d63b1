package trpcagent

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/event"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/runner"
	"trpc.group/trpc-go/trpc-agent-go/session/inmemory"
)

// rig is a governed trpc-agent-go agent over a runs database in dir: the
// real llmagent (parallel tools on) and runner with the in-memory session
// service, the note tools, a scripted model, and a Gate whose observer
// signals every commit.
type rig struct {
	adaptertest.Runs
	store  *sqlite.Store
	gate   *agentrt.Gate
	notes  noteTools
	llm    *scriptedModel
	runner runner.Runner
}

const testApp, testUser = "notes", "u1"

// newRig builds the rig; a restart is a second rig on the same dir.
func newRig(t testing.TB, dir string, policy agentrt.Policy, opts Options, script ...model.Message) *rig {
	t.Helper()
	r, err := buildRig(dir, agentrt.EngineConfig{Policy: policy}, opts, script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.runner.Close(); r.store.Close() })
	return r
}

// buildRig is newRig for a process with no test to fail: the crash
// child. cfg's Store, Tools and Observer are the rig's own.
func buildRig(dir string, cfg agentrt.EngineConfig, opts Options, script ...model.Message) (*rig, error) {
	notes, err := adaptertest.NewNotes(dir)
	if err != nil {
		return nil, err
	}
	r := &rig{notes: noteTools{notes}, llm: scripted(script)}
	r.DB = filepath.Join(dir, "runs.db")
	if r.store, err = sqlite.Open(r.DB); err != nil {
		return nil, err
	}
	r.Store = r.store
	tools := r.notes.tools()
	specs, err := Specs(tools, classes, time.Minute)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Tools, cfg.Observer = r.store, specs, r.Events.Observe
	if r.gate, err = agentrt.NewGate(agentrt.GateConfig{EngineConfig: cfg}); err != nil {
		return nil, err
	}
	aopts := append([]llmagent.Option{llmagent.WithModel(r.llm), llmagent.WithTools(tools), llmagent.WithEnableParallelTools(true)},
		Govern(r.gate, classes, opts).AgentOptions()...)
	ag := llmagent.New("writer", aopts...)
	r.runner = runner.NewRunner(testApp, ag, runner.WithSessionService(inmemory.NewSessionService()))
	return r, nil
}

// run runs one user message through the agent in session sessionID and
// returns its events; an error event is the error.
func (r *rig) run(ctx context.Context, sessionID, msg string) ([]*event.Event, error) {
	ch, err := r.runner.Run(ctx, testUser, sessionID, model.NewUserMessage(msg))
	if err != nil {
		return nil, err
	}
	var evs []*event.Event
	for ev := range ch {
		evs = append(evs, ev)
		if ev.Response != nil && ev.Response.Error != nil && err == nil {
			err = errors.New(ev.Response.Error.Message)
		}
	}
	return evs, err
}

// goRun runs msg in the background; the channel yields the error.
func (r *rig) goRun(sessionID, msg string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.run(context.Background(), sessionID, msg)
		done <- err
	}()
	return done
}
