package adk

import (
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
)

// The Gate pauses a run at once when a lone step needs approval, and ADK
// starts a turn's calls on goroutines that may reach the callback late. So
// AfterModel notes the calls of each turn; each call opens its step, then
// that may need approval waits until its siblings have opened theirs (at
// most Options.TurnWait), and only then proposes: a write that waits for an operator waits alone,
// and its allowed siblings run.

// turn counts the calls of one model turn that have opened their steps.
type turn struct {
	want, opened int
	ready        chan struct{}
}

// afterModel notes the governed calls of a model turn that asks for more
// than one; it leaves the response as it is.
func (gv *governor) afterModel(_ agent.Context, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
	if err != nil || resp == nil || resp.Content == nil || resp.Partial {
		return nil, nil
	}
	var ids []string
	for _, p := range resp.Content.Parts {
		if fc := p.FunctionCall; fc != nil && fc.ID != "" {
			if _, ok := gv.classes[fc.Name]; ok {
				ids = append(ids, fc.ID)
			}
		}
	}
	if len(ids) > 1 {
		t := &turn{want: len(ids), ready: make(chan struct{})}
		gv.mu.Lock()
		for _, id := range ids {
			gv.turns[id] = t
		}
		gv.mu.Unlock()
	}
	return nil, nil
}

// join records that call id opened its step and, when wait, waits for the
// rest of its turn or for Options.TurnWait to pass. Only a call that may
// need approval waits: a read proposes at once, so a task runner that runs
// a turn's calls one after another loses nothing on reads.
func (gv *governor) join(id string, wait bool) {
	gv.mu.Lock()
	t := gv.turns[id]
	delete(gv.turns, id)
	if t != nil {
		if t.opened++; t.opened == t.want {
			close(t.ready)
		}
	}
	gv.mu.Unlock()
	if t == nil || !wait || gv.opts.TurnWait < 0 {
		return
	}
	timer := time.NewTimer(gv.opts.TurnWait)
	defer timer.Stop()
	select {
	case <-t.ready:
	case <-timer.C:
	}
}
