package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// A failed step whose observation is over the page cap is listed with its
// real kind and summary, read by SQLite from the stored JSON, not a made-up
// tool_result; DecodeError says it was not read whole.
func TestStore_PageShowsALargeRowsRealKindAndSummary(t *testing.T) {
	s, p := openTemp(t)
	defer s.Close()
	writeSomething(t, s)
	db := raw(t, p)
	content := strings.Repeat("o", 2*agentrt.MaxPageText)
	obs, _ := json.Marshal(agentrt.Observation{Kind: agentrt.ObsToolError, Content: json.RawMessage(`"` + content + `"`), Summary: "disk full"})
	dec, _ := json.Marshal(agentrt.Decision{Kind: agentrt.KindToolCall, Tool: "write", Args: json.RawMessage(`{"s":"` + content + `"}`)})
	pol, _ := json.Marshal(agentrt.PolicyDecision{Outcome: agentrt.Deny, Reason: "too big", Capability: json.RawMessage(`"` + content + `"`)})
	if _, err := db.Exec(`INSERT INTO steps (id, run_id, idx, status, decision_json, policy_json, observation_json, started_at)
		VALUES ('s0', 'r1', 0, 'failed', ?, ?, ?, '2026-01-01T00:00:00Z')`, string(dec), string(pol), string(obs)); err != nil {
		t.Fatal(err)
	}
	steps, total, err := s.ListStepsPage(context.Background(), "r1", 10, 0)
	if err != nil || total != 1 || len(steps) != 1 {
		t.Fatalf("ListStepsPage = %d of %d, %v", len(steps), total, err)
	}
	st := steps[0]
	if st.Observation == nil || st.Observation.Kind != agentrt.ObsToolError || st.Observation.Summary != "disk full" {
		t.Fatalf("observation listed as %+v", st.Observation)
	}
	if st.Decision == nil || st.Decision.Kind != agentrt.KindToolCall || st.Decision.Tool != "write" {
		t.Fatalf("decision listed as %+v", st.Decision)
	}
	if st.Policy == nil || st.Policy.Outcome != agentrt.Deny || st.Policy.Reason != "too big" {
		t.Fatalf("policy listed as %+v", st.Policy)
	}
	for _, f := range []string{"decision", "policy", "observation"} {
		if !strings.Contains(st.DecodeError, f+" (") || !strings.Contains(st.DecodeError, "not read whole") {
			t.Fatalf("DecodeError %q does not say the %s was not read whole", st.DecodeError, f)
		}
	}
}

// A payload over MaxStoredValue is reported as a break by its size, without
// being read; one at the bound is read once and verifies.
func TestVerifyEvents_PayloadOverTheBoundIsABreakNotRead(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~33 MB")
	}
	s, p := openTemp(t)
	defer s.Close()
	ctx := context.Background()
	writeSomething(t, s)
	atBound := `{"s":"` + strings.Repeat("a", agentrt.MaxStoredValue-8) + `"}`
	if _, err := s.Update(ctx, func(tx agentrt.Tx) error {
		_, err := tx.EventAppend(agentrt.Event{RunID: "r1", At: time.Now(), Type: agentrt.EventRunCreated, Payload: json.RawMessage(atBound)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() || rep.Checked != 2 {
		t.Fatalf("a payload at the bound: %+v, %v", rep, err)
	}
	db := raw(t, p)
	over := agentrt.MaxStoredValue + 1
	if _, err := db.Exec(`INSERT INTO events (run_id, at, type, payload_json, hash) VALUES ('r1', '2026-01-01T00:00:00Z', 'run.created', printf('%.*c', ?, 'p'), '')`, over); err != nil {
		t.Fatal(err)
	}
	rep, err = s.VerifyEvents(ctx, 0, 0)
	if err != nil || rep.Break == nil || rep.Break.Seq != 3 || rep.Checked != 2 {
		t.Fatalf("a payload over the bound: %+v, %v", rep, err)
	}
	if want := fmt.Sprintf("%d bytes, larger than any event agentrt writes", over); !strings.Contains(rep.Break.Detail, want) {
		t.Fatalf("break detail %q, want it to say %q", rep.Break.Detail, want)
	}
}
