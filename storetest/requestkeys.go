package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// requestKeys checks the look-up of a request key: a key written with a
// step's decision finds that step in any run, newest first, at most limit;
// other keys, and steps recorded without one, are not found.
func requestKeys(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "a")
	insertRun(t, s, "b")
	key, err := agentrt.RequestKey("send", json.RawMessage(`{"to":"x"}`))
	must(t, err)
	other, err := agentrt.RequestKey("send", json.RawMessage(`{"to":"y"}`))
	must(t, err)
	step := func(run string, idx int, k string) string {
		id := fmt.Sprintf("%s-%d", run, idx)
		_, err := update(t, s, func(tx agentrt.Tx) error {
			if err := tx.StepInsert(agentrt.Step{ID: id, RunID: run, Index: idx, Status: agentrt.StepDeciding,
				StartedAt: t0.Add(time.Duration(idx) * time.Second)}); err != nil {
				return err
			}
			d := agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "send", Args: json.RawMessage(`{"to":"x"}`)}
			return tx.StepUpdate(agentrt.StepUpdate{ID: id, From: []agentrt.StepStatus{agentrt.StepDeciding}, Decision: &d, RequestKey: k})
		})
		must(t, err)
		return id
	}
	step("a", 0, key)
	step("a", 1, other)
	step("b", 2, key)
	step("b", 3, "")
	ids := func(steps []agentrt.Step) string {
		var out []string
		for _, st := range steps {
			out = append(out, st.ID)
		}
		return strings.Join(out, " ")
	}
	got, err := s.StepsByRequestKey(ctx, key, 10)
	must(t, err)
	if want := "b-2 a-0"; ids(got) != want {
		t.Fatalf("steps under the key = %q, want %q (newest first)", ids(got), want)
	}
	if got[1].Decision == nil || got[1].Decision.Tool != "send" || got[1].RunID != "a" {
		t.Fatalf("a-0 read as %+v", got[1])
	}
	got, err = s.StepsByRequestKey(ctx, key, 1)
	must(t, err)
	if want := "b-2"; ids(got) != want {
		t.Fatalf("limit 1 = %q, want %q", ids(got), want)
	}
	for _, k := range []string{"", strings.Repeat("0", 64)} {
		got, err = s.StepsByRequestKey(ctx, k, 10)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("key %q found %q", k, ids(got))
		}
	}
}
