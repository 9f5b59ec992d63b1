package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// stepEvents checks the read a resume makes of one step's events: only that
// step of that run, after a seq, in commit order, at most limit, and bad
// arguments refused.
func stepEvents(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "a") // seq 1
	insertRun(t, s, "b") // seq 2
	appendTo := func(run, step string, i int) {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: run, StepID: step, At: t0, Type: agentrt.EventStepStarted,
				Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
			return err
		})
		must(t, err)
	}
	appendTo("a", "s1", 0) // 3
	appendTo("a", "s2", 1) // 4
	appendTo("b", "s1", 2) // 5: same step id, another run
	appendTo("a", "s1", 3) // 6
	appendTo("a", "s1", 4) // 7
	seqs := func(evs []agentrt.Event) string {
		out := ""
		for _, e := range evs {
			out += fmt.Sprintf("%d ", e.Seq)
		}
		return out
	}
	got, err := s.ListStepEvents(ctx, "a", "s1", 0, 10)
	must(t, err)
	if want := "3 6 7 "; seqs(got) != want {
		t.Fatalf("run a step s1 = %s, want %s", seqs(got), want)
	}
	if string(got[1].Payload) != `{"i":3}` || got[1].StepID != "s1" || got[1].RunID != "a" {
		t.Fatalf("event 6 = %+v", got[1])
	}
	got, err = s.ListStepEvents(ctx, "a", "s1", 3, 1)
	must(t, err)
	if want := "6 "; seqs(got) != want {
		t.Fatalf("run a step s1 after 3, limit 1 = %s, want %s", seqs(got), want)
	}
	got, err = s.ListStepEvents(ctx, "a", "s1", 7, 10)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("after the last event = %s, want nothing", seqs(got))
	}
	for _, bad := range []struct {
		run, step    string
		after, limit int64
	}{{"", "s1", 0, 1}, {"a", "", 0, 1}, {"a", "s1", -1, 1}, {"a", "s1", 0, 0}} {
		if _, err := s.ListStepEvents(ctx, bad.run, bad.step, bad.after, int(bad.limit)); err == nil {
			t.Fatalf("ListStepEvents(%q, %q, %d, %d) was accepted", bad.run, bad.step, bad.after, bad.limit)
		}
	}
}

// stepsEvents checks the read a page makes of its steps' events: only the
// named steps of that run, only the type asked for, in commit order, at
// most limit, and bad arguments refused.
func stepsEvents(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "a") // seq 1
	insertRun(t, s, "b") // seq 2
	appendTo := func(run, step string, typ agentrt.EventType) {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: run, StepID: step, At: t0, Type: typ, Payload: json.RawMessage(`{}`)})
			return err
		})
		must(t, err)
	}
	appendTo("a", "s1", agentrt.EventToolFinished) // 3
	appendTo("a", "s2", agentrt.EventStepStarted)  // 4: another type
	appendTo("b", "s1", agentrt.EventToolFinished) // 5: same step id, another run
	appendTo("a", "s3", agentrt.EventToolFinished) // 6: a step not named
	appendTo("a", "s2", agentrt.EventToolFinished) // 7
	appendTo("a", "s1", agentrt.EventToolFinished) // 8
	seqs := func(evs []agentrt.Event) string {
		out := ""
		for _, e := range evs {
			out += fmt.Sprintf("%d ", e.Seq)
		}
		return out
	}
	got, err := s.ListStepsEvents(ctx, "a", []string{"s2", "s1"}, agentrt.EventToolFinished, 10)
	must(t, err)
	if want := "3 7 8 "; seqs(got) != want {
		t.Fatalf("run a steps s1, s2, tool_finished = %s, want %s", seqs(got), want)
	}
	if got[1].StepID != "s2" || got[1].RunID != "a" || got[1].Type != agentrt.EventToolFinished {
		t.Fatalf("event 7 = %+v", got[1])
	}
	got, err = s.ListStepsEvents(ctx, "a", []string{"s1", "s2"}, agentrt.EventToolFinished, 2)
	must(t, err)
	if want := "3 7 "; seqs(got) != want {
		t.Fatalf("limit 2 = %s, want %s", seqs(got), want)
	}
	got, err = s.ListStepsEvents(ctx, "a", nil, agentrt.EventToolFinished, 10)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("no steps named = %s, want nothing", seqs(got))
	}
	for _, bad := range []struct {
		run   string
		typ   agentrt.EventType
		limit int
	}{{"", agentrt.EventToolFinished, 1}, {"a", "", 1}, {"a", agentrt.EventToolFinished, 0}} {
		if _, err := s.ListStepsEvents(ctx, bad.run, []string{"s1"}, bad.typ, bad.limit); err == nil {
			t.Fatalf("ListStepsEvents(%q, %q, %d) was accepted", bad.run, bad.typ, bad.limit)
		}
	}
}
