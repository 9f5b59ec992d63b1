package adk

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// rig is a governed ADK agent over a runs database in dir: the real
// llmagent and runner with the in-memory session service, the note tools,
// a scripted model, and a Gate whose observer signals every commit.
type rig struct {
	adaptertest.Runs
	store    *sqlite.Store
	gate     *agentrt.Gate
	notes    noteTools
	llm      *scriptedLLM
	runner   *runner.Runner
	sessions session.Service
}

const testApp, testUser = "notes", "u1"

// newRig builds the rig; a restart is a second rig on the same dir.
func newRig(t testing.TB, dir string, policy agentrt.Policy, opts Options, script ...*genai.Content) *rig {
	t.Helper()
	r, err := buildRig(dir, agentrt.EngineConfig{Policy: policy}, opts, script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.store.Close() })
	return r
}

// buildRig is newRig for a process with no test to fail: the crash
// child. cfg's Store, Tools and Observer are the rig's own.
func buildRig(dir string, cfg agentrt.EngineConfig, opts Options, script ...*genai.Content) (*rig, error) {
	notes, err := adaptertest.NewNotes(dir)
	if err != nil {
		return nil, err
	}
	r := &rig{notes: noteTools{notes}, llm: scripted(script)}
	r.DB = filepath.Join(dir, "runs.db")
	store, err := sqlite.Open(r.DB)
	if err != nil {
		return nil, err
	}
	tools, err := r.notes.tools()
	if err != nil {
		return nil, err
	}
	specs, err := Specs(tools, classes, time.Minute)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Tools, cfg.Observer = store, specs, r.Events.Observe
	r.store, r.Store = store, store
	if r.gate, err = agentrt.NewGate(agentrt.GateConfig{EngineConfig: cfg}); err != nil {
		return nil, err
	}
	acfg := llmagent.Config{Name: "writer", Model: r.llm, Tools: tools}
	Govern(r.gate, classes, opts).Apply(&acfg)
	ag, err := llmagent.New(acfg)
	if err != nil {
		return nil, err
	}
	r.sessions = session.InMemoryService()
	if r.runner, err = runner.New(runner.Config{AppName: testApp, Agent: ag, SessionService: r.sessions}); err != nil {
		return nil, err
	}
	return r, nil
}

// session creates the ADK session id (again, after a restart).
func (r *rig) session(t testing.TB, id string) string {
	t.Helper()
	if _, err := r.sessions.Create(context.Background(), &session.CreateRequest{AppName: testApp, UserID: testUser, SessionID: id}); err != nil {
		t.Fatal(err)
	}
	return RunID(testApp, testUser, id)
}

// run runs one user message through the agent and returns the events.
func (r *rig) run(ctx context.Context, sessionID string, msg *genai.Content) ([]*session.Event, error) {
	var evs []*session.Event
	for ev, err := range r.runner.Run(ctx, testUser, sessionID, msg, agent.RunConfig{}) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// goRun runs msg in the background; the channel yields the error.
func (r *rig) goRun(sessionID string, msg *genai.Content) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.run(context.Background(), sessionID, msg)
		done <- err
	}()
	return done
}
