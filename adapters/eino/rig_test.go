package eino

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// approvalPolicy sends local writes to an operator and denies deletes.
var approvalPolicy = agentrt.SideEffectPolicy{agentrt.ReadOnly: agentrt.Allow, agentrt.LocalMutation: agentrt.RequireApproval,
	agentrt.RemoteMutation: agentrt.RequireApproval, agentrt.Destructive: agentrt.Deny}

// rig is one process's agentrt side: a SQLite runs database, a Gate over
// the note tools' specs, and the guard.
type rig struct {
	db     string
	store  *sqlite.Store
	gate   *agentrt.Gate
	guard  *Guard
	notes  *noteTools
	mu     sync.Mutex
	events map[agentrt.EventType]chan struct{} // closed at the first event of the type
}

func newRig(t testing.TB, dir string, opts Options, leaseTTL time.Duration) *rig {
	t.Helper()
	r := &rig{db: filepath.Join(dir, "runs.db"), notes: &noteTools{path: filepath.Join(dir, "note.txt")}, events: map[agentrt.EventType]chan struct{}{}}
	if _, err := os.Stat(r.notes.path); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(r.notes.path, []byte("first line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sqlite.Open(r.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	tools, err := r.notes.tools()
	if err != nil {
		t.Fatal(err)
	}
	specs, err := Tools(context.Background(), tools, classes, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.gate, err = agentrt.NewGate(agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{
		Store: st, Policy: approvalPolicy, Tools: specs, LeaseTTL: leaseTTL, Observer: r.observe}})
	if err != nil {
		t.Fatal(err)
	}
	r.guard = New(r.gate, classes, opts)
	t.Cleanup(r.guard.Close)
	return r
}

func (r *rig) on(typ agentrt.EventType) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.events[typ]
	if c == nil {
		c = make(chan struct{})
		r.events[typ] = c
	}
	return c
}

func (r *rig) observe(e agentrt.Event) {
	c := r.on(e.Type)
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// await fails t unless typ is heard within a minute.
func (r *rig) await(t testing.TB, typ agentrt.EventType) {
	t.Helper()
	select {
	case <-r.on(typ):
	case <-time.After(time.Minute):
		t.Fatalf("no %s event within a minute", typ)
	}
}

// runner is a real ChatModelAgent under a Runner with a checkpoint store,
// its tools governed by the rig's guard.
func (r *rig) runner(t testing.TB, llm *scriptedModel, cps *memStore) *adk.Runner {
	t.Helper()
	tools, err := r.notes.tools()
	if err != nil {
		t.Fatal(err)
	}
	ag, err := adk.NewChatModelAgent(context.Background(), &adk.ChatModelAgentConfig{
		Name: "writer", Description: "writes notes", Model: llm,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools: tools, ToolCallMiddlewares: []compose.ToolMiddleware{r.guard.Middleware()}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return adk.NewRunner(context.Background(), adk.RunnerConfig{Agent: ag, CheckPointStore: cps})
}

// events reads a run's events: the final text, and the ids of the root
// causes of an interrupt (none when it was not interrupted).
func events(iter *adk.AsyncIterator[*adk.AgentEvent]) (string, []string, error) {
	var final string
	var interrupted []string
	for {
		ev, ok := iter.Next()
		if !ok {
			return final, interrupted, nil
		}
		if ev.Err != nil {
			return final, interrupted, ev.Err
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			for _, c := range ev.Action.Interrupted.InterruptContexts {
				if c.IsRootCause {
					interrupted = append(interrupted, c.ID)
				}
			}
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			if m, err := ev.Output.MessageOutput.GetMessage(); err == nil && m.Role == schema.Assistant && m.Content != "" {
				final = m.Content
			}
		}
	}
}

// pending is the run's one pending approval.
func (r *rig) pending(t testing.TB, runID string) agentrt.Approval {
	t.Helper()
	apps, err := r.store.ListApprovals(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []agentrt.Approval
	for _, a := range apps {
		if a.Status == agentrt.ApprovalPending {
			out = append(out, a)
		}
	}
	if len(out) != 1 {
		t.Fatalf("run %s has %d pending approvals, want 1: %+v", runID, len(out), apps)
	}
	return out[0]
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// agentrtBinary builds the real agentrt command from the repository once.
func agentrtBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentrt-eino-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "agentrt")
		out, err := exec.Command("go", "build", "-C", "../../cmd", "-o", binPath, "./agentrt").CombinedOutput()
		if err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("building agentrt: %v", binErr)
	}
	return binPath
}

// cli runs the real agentrt binary on the rig's database.
func (r *rig) cli(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(agentrtBinary(t), append([]string{"-db", r.db}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("agentrt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
