package genkit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/testkit/adaptertest"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

func TestMain(m *testing.M) { os.Exit(adaptertest.Main(m)) }

// rig is one program using the adapter: a SQLite file, a Gate with the
// note tools registered by spec, Genkit with the scripted model, and the
// middleware. Every event the gate commits is also sent on events.
type rig struct {
	dir, db string
	store   *sqlite.Store
	gate    *agentrt.Gate
	g       *genkit.Genkit
	notes   noteTools
	tools   []ai.ToolRef
	llm     *scriptedModel
	model   ai.Model
	mw      ai.Middleware
	outer   ai.Middleware // when set, wraps the adapter's middleware
	events  chan agentrt.Event
	evs     adaptertest.Events // the same events, for AwaitStatus
}

// newRig builds a rig in dir (a fresh temporary one when "") with the
// model's script and the middleware's options; leaseTTL zero is the default.
func newRig(t testing.TB, dir string, leaseTTL time.Duration, opts Options, script ...*ai.Message) *rig {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	notes, err := adaptertest.NewNotes(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, db: filepath.Join(dir, "runs.db"), events: make(chan agentrt.Event, 1024), notes: noteTools{notes}}
	st, err := sqlite.Open(r.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.store = st
	ctx := context.Background()
	r.g = genkit.Init(ctx)
	r.tools = r.notes.define(r.g)
	var gtools []ai.Tool
	for _, tr := range r.tools {
		gtools = append(gtools, tr.(ai.Tool))
	}
	r.gate, err = agentrt.NewGate(agentrt.GateConfig{AwaitPoll: 5 * time.Millisecond, EngineConfig: agentrt.EngineConfig{
		Store: st, Policy: agentrt.DefaultPolicy(), Tools: Specs(classes, gtools...), LeaseTTL: leaseTTL,
		Observer: func(e agentrt.Event) {
			r.evs.Observe(e)
			select {
			case r.events <- e:
			default:
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	r.llm = scripted(script)
	r.model = r.llm.define(r.g)
	r.mw = Middleware(r.gate, classes, opts)
	return r
}

// generate runs one Generate of the run with the middleware.
func (r *rig) generate(ctx context.Context, runID string, extra ...ai.GenerateOption) (*ai.ModelResponse, error) {
	use := []ai.Middleware{r.mw}
	if r.outer != nil {
		use = []ai.Middleware{r.outer, r.mw}
	}
	opts := append([]ai.GenerateOption{ai.WithModel(r.model), ai.WithTools(r.tools...), ai.WithUse(use...)}, extra...)
	if len(extra) == 0 {
		opts = append(opts, ai.WithPrompt("keep the note"))
	}
	return genkit.Generate(WithRun(ctx, runID), r.g, opts...)
}

// waitEvent returns the next event of type typ the gate committed.
func (r *rig) waitEvent(t testing.TB, typ agentrt.EventType) agentrt.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-r.events:
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event within 20s", typ)
		}
	}
}

// agentrt runs the real binary on the rig's database.
func (r *rig) agentrt(t testing.TB, args ...string) string {
	t.Helper()
	return adaptertest.CLI(t, r.db, args...)
}

// approve has the operator approve the run's pending approval id.
func (r *rig) approve(t testing.TB, runID, id string) {
	t.Helper()
	if out := r.agentrt(t, "approve", runID, "-approval", id, "-by", "ops"); !strings.Contains(out, "approved") {
		t.Fatalf("agentrt approve: %s", out)
	}
}

// pending returns the run's approvals still pending.
func (r *rig) pending(t testing.TB, runID string) []agentrt.Approval {
	t.Helper()
	return adaptertest.Approvals(t, r.store, runID, agentrt.ApprovalPending)
}

// note is the note file's text.
func (r *rig) note(t testing.TB) string { t.Helper(); return r.notes.Text(t) }

// verify runs agentrt verify, which exits 1 on a broken chain.
func (r *rig) verify(t testing.TB) { t.Helper(); r.agentrt(t, "verify") }
