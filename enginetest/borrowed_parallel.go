package enginetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// Sibling steps of one gate session write at once: a step's own writes
// (its decision, its tool start, its outcome) commit without the session's
// lock, so siblings' writes can share the store's group commit.

// bwHoldStore holds the first Update made after arm until release, telling
// entered when it holds one.
type bwHoldStore struct {
	agentrt.Store
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func bwNewHoldStore(st agentrt.Store) *bwHoldStore {
	return &bwHoldStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *bwHoldStore) arm() {
	h.mu.Lock()
	h.armed = true
	h.mu.Unlock()
}

func (h *bwHoldStore) let() { h.once.Do(func() { close(h.release) }) }

func (h *bwHoldStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	h.mu.Lock()
	held := h.armed
	h.armed = false
	h.mu.Unlock()
	if held {
		close(h.entered)
		<-h.release
	}
	return h.Store.Update(ctx, fn)
}

// While one step's decision is on its way to the store (held there), a
// sibling step opens and its tool call runs to its recorded end: a
// step's write does not hold up its siblings. The held decision then
// commits and its call runs too; each step's events are in causal order,
// the sibling's start recorded between the first step's start and its
// decision, and the record is one chain that verifies.
func caseGate_SiblingGoesOnWhileAStepsWriteCommits(t *testing.T, bk *Backend) {
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	hs := bwNewHoldStore(st)
	t.Cleanup(hs.let)
	read := lkNewTool("read", agentrt.ReadOnly, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: hs, Tools: []agentrt.Tool{read}}}, nil)
	s := bwBegin(t, g)
	defer s.Close()
	// Released before Close, which waits for a held write's call.
	defer hs.let()
	a, err := s.Step(ctx)
	if err != nil || a == nil {
		t.Fatalf("Step: %v", err)
	}
	hs.arm()
	var av agentrt.Verdict
	var aerr error
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		av, aerr = a.Propose(ctx, lkCall("read", `{"n":1}`))
	}()
	lkSignal(t, hs.entered, "the first step's decision reaching the store")
	bDone := make(chan struct{})
	var bObs agentrt.Observation
	var bErr error
	var b *agentrt.OpenStep
	go func() {
		defer close(bDone)
		if b, bErr = s.Step(ctx); bErr != nil || b == nil {
			bErr = fmt.Errorf("step: %v (nil step %t)", bErr, b == nil)
			return
		}
		var v agentrt.Verdict
		if v, bErr = b.Propose(ctx, lkCall("read", `{"n":2}`)); bErr == nil && v.Outcome == agentrt.VerdictAllowed {
			bObs, bErr = b.Execute(ctx)
		}
	}()
	lkSignal(t, bDone, "the sibling's call while the first step's decision was held")
	if bErr != nil || bObs.Kind != agentrt.ObsToolResult {
		t.Fatalf("the sibling's call: %s, %v", bObs.Kind, bErr)
	}
	hs.let()
	lkSignal(t, aDone, "the first step's decision")
	if aerr != nil || av.Outcome != agentrt.VerdictAllowed {
		t.Fatalf("the first step's verdict: %s, %v", av.Outcome, aerr)
	}
	if obs, err := a.Execute(ctx); err != nil || obs.Kind != agentrt.ObsToolResult {
		t.Fatalf("the first step's call: %s, %v", obs.Kind, err)
	}
	if got := read.args(); len(got) != 2 || got[0] != `{"n":2}` || got[1] != `{"n":1}` {
		t.Fatalf("read ran with %v, want the sibling's call first, each once", got)
	}
	evs, err := st.ListEvents(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	at := bwFirstAt(evs)
	aStarted, aDecided := at[a.ID()+"/"+string(agentrt.EventStepStarted)], at[a.ID()+"/"+string(agentrt.EventStepDecided)]
	bStarted, bFinished := at[b.ID()+"/"+string(agentrt.EventStepStarted)], at[b.ID()+"/"+string(agentrt.EventToolFinished)]
	if !(aStarted < bStarted && bStarted < bFinished && bFinished < aDecided) {
		t.Fatalf("event positions: first step started %d decided %d; sibling started %d finished %d", aStarted, aDecided, bStarted, bFinished)
	}
	bwRequireStepOrder(t, evs, a.ID(), b.ID())
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunRunning || r.StepCount != 2 {
		t.Fatalf("run %s with %d steps, want RUNNING with 2", r.Status, r.StepCount)
	}
}

// bwFirstAt maps "stepID/type" to the position of the step's first event of
// that type.
func bwFirstAt(evs []agentrt.Event) map[string]int {
	at := map[string]int{}
	for i, ev := range evs {
		k := ev.StepID + "/" + string(ev.Type)
		if _, ok := at[k]; !ok {
			at[k] = i
		}
	}
	return at
}

// bwRequireStepOrder requires each named step's events in the order an
// allowed call makes them: started, decided, policy, tool started, tool
// finished, each once; and the run's sequence numbers strictly rising.
func bwRequireStepOrder(t *testing.T, evs []agentrt.Event, stepIDs ...string) {
	t.Helper()
	want := []agentrt.EventType{agentrt.EventStepStarted, agentrt.EventStepDecided, agentrt.EventStepPolicy,
		agentrt.EventToolStarted, agentrt.EventToolFinished}
	per := map[string][]agentrt.EventType{}
	for i, ev := range evs {
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			t.Fatalf("event %d has seq %d after %d", i, ev.Seq, evs[i-1].Seq)
		}
		per[ev.StepID] = append(per[ev.StepID], ev.Type)
	}
	for _, id := range stepIDs {
		if got := per[id]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %s: events %v, want %v", id, got, want)
		}
	}
}

// Eight goroutines each make four calls of one run at once, every call
// opening its own step: three reads the policy allows, and one whose
// arguments the schema refuses. Every allowed read runs exactly once, each
// refused call is denied and runs nothing, every step's events are in
// causal order within one rising sequence, the step indexes are 0..31 with
// none repeated, the run is still RUNNING with 32 steps, and the record is
// one chain that verifies.
func caseGate_SiblingsWritingAtOnceKeepEachStepsOrder(t *testing.T, bk *Backend) {
	const workers, calls = 8, 4
	ctx := context.Background()
	st, _ := lkOpen(t, bk)
	read := lkNewTool("read", agentrt.ReadOnly, nil)
	g := lkGate(t, agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: st, Tools: []agentrt.Tool{read}}}, nil)
	s := bwBegin(t, g)
	defer s.Close()
	made := make([][]bwCall, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			made[w], errs[w] = bwSiblingCalls(ctx, s, w, calls)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	lkSignal(t, done, "the siblings' calls")
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	evs, err := st.ListEvents(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var allowed []string
	seen := map[int]bool{}
	for _, cs := range made {
		for _, c := range cs {
			if seen[c.index] || c.index < 0 || c.index >= workers*calls {
				t.Fatalf("step index %d repeated or out of range", c.index)
			}
			seen[c.index] = true
			if c.allowed {
				allowed = append(allowed, c.id)
			}
		}
	}
	bwRequireStepOrder(t, evs, allowed...)
	if n := len(read.args()); n != workers*(calls-1) {
		t.Fatalf("read ran %d times, want %d", n, workers*(calls-1))
	}
	for _, step := range kit.MustSteps(t, st, "run-1") {
		if step.Status != agentrt.StepDone && step.Status != agentrt.StepFailed {
			t.Fatalf("step %d is %s", step.Index, step.Status)
		}
	}
	if r := kit.MustRun(t, st, "run-1"); r.Status != agentrt.RunRunning || r.StepCount != workers*calls {
		t.Fatalf("run %s with %d steps, want RUNNING with %d", r.Status, r.StepCount, workers*calls)
	}
	if rep, err := st.VerifyEvents(ctx, 0, 0); err != nil || !rep.Intact() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// bwCall is a call one goroutine made: its step, and whether it ran.
type bwCall struct {
	id      string
	index   int
	allowed bool
}

// bwSiblingCalls makes calls calls of s's run one after another, each on
// its own step: reads with distinct arguments, the third refused by the
// schema.
func bwSiblingCalls(ctx context.Context, s *agentrt.GateSession, w, calls int) ([]bwCall, error) {
	var made []bwCall
	for k := 0; k < calls; k++ {
		o, err := s.Step(ctx)
		if err != nil || o == nil {
			return made, fmt.Errorf("step: %v (nil step %t)", err, o == nil)
		}
		args, want := fmt.Sprintf(`{"n":%d}`, w*calls+k), agentrt.VerdictAllowed
		if k == 2 {
			args, want = `{"n":"not a number"}`, agentrt.VerdictDenied
		}
		v, err := o.Propose(ctx, lkCall("read", args))
		if err != nil || v.Outcome != want {
			return made, fmt.Errorf("propose %s: %s, %v; want %s", args, v.Outcome, err, want)
		}
		if want == agentrt.VerdictAllowed {
			if obs, err := o.Execute(ctx); err != nil || obs.Kind != agentrt.ObsToolResult {
				return made, fmt.Errorf("execute %s: %s, %v", args, obs.Kind, err)
			}
		}
		made = append(made, bwCall{o.ID(), o.Index(), want == agentrt.VerdictAllowed})
	}
	return made, nil
}
