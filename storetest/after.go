package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
)

// eventsAfter checks the follower's read: pages after a seq in commit order,
// across runs or of one, bounded by rows and by bytes, with a payload over
// MaxStoredValue replaced by a stand-in that is still JSON.
func eventsAfter(t *testing.T, s agentrt.Store) {
	defer s.Close()
	ctx := context.Background()
	insertRun(t, s, "a") // seq 1
	insertRun(t, s, "b") // seq 2
	for i := 0; i < 6; i++ {
		run := []string{"a", "b"}[i%2]
		_, err := update(t, s, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: run, StepID: "s", At: t0, Type: agentrt.EventStepStarted,
				Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
			return err
		})
		must(t, err)
	} // seq 3..8: a, b, a, b, a, b
	seqs := func(evs []agentrt.Event) string {
		var b strings.Builder
		for _, e := range evs {
			fmt.Fprintf(&b, "%d%s ", e.Seq, e.RunID)
		}
		return strings.TrimSpace(b.String())
	}
	var got []agentrt.Event
	for after := int64(0); ; {
		page, err := s.ListEventsAfter(ctx, "", after, 3)
		must(t, err)
		if len(page) > 3 {
			t.Fatalf("a page of limit 3 held %d events", len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	if want := "1a 2b 3a 4b 5a 6b 7a 8b"; seqs(got) != want {
		t.Fatalf("every run after 0 = %s, want %s", seqs(got), want)
	}
	if got[2].StepID != "s" || got[2].Type != agentrt.EventStepStarted || !got[2].At.Equal(t0) || string(got[2].Payload) != `{"i":0}` {
		t.Fatalf("event 3 = %+v", got[2])
	}
	page, err := s.ListEventsAfter(ctx, "b", 4, 10)
	must(t, err)
	if want := "6b 8b"; seqs(page) != want {
		t.Fatalf("run b after 4 = %s, want %s", seqs(page), want)
	}
	page, err = s.ListEventsAfter(ctx, "", 8, 10)
	must(t, err)
	if len(page) != 0 {
		t.Fatalf("after the head = %s, want nothing", seqs(page))
	}

	// One payload over the bound on a stored value: not loaded, and the
	// page ends with it, because it spent the page's byte budget.
	huge := `{"v":"` + strings.Repeat("h", agentrt.MaxStoredValue) + `"}`
	for _, p := range []string{huge, `{"after":"huge"}`} {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			_, err := tx.EventAppend(agentrt.Event{RunID: "a", At: t0, Type: agentrt.EventToolFinished, Payload: json.RawMessage(p)})
			return err
		})
		must(t, err)
	} // seq 9, 10
	page, err = s.ListEventsAfter(ctx, "a", 7, 10)
	must(t, err)
	if want := "9a"; seqs(page) != want {
		t.Fatalf("after 7 with a huge payload = %s, want %s (the page ends at its byte budget)", seqs(page), want)
	}
	var stand struct {
		Truncated bool   `json:"truncated"`
		Length    int64  `json:"length"`
		Head      string `json:"head"`
	}
	if len(page[0].Payload) > 4096 || json.Unmarshal(page[0].Payload, &stand) != nil ||
		!stand.Truncated || stand.Length != int64(len(huge)) || !strings.HasPrefix(stand.Head, `{"v":"hhh`) {
		t.Fatalf("huge payload read as %.200s (%d bytes)", page[0].Payload, len(page[0].Payload))
	}
	page, err = s.ListEventsAfter(ctx, "a", 9, 10)
	must(t, err)
	if seqs(page) != "10a" || string(page[0].Payload) != `{"after":"huge"}` {
		t.Fatalf("after 9 = %s", seqs(page))
	}

	for _, bad := range []struct {
		after int64
		limit int
	}{{-1, 10}, {0, 0}, {0, -5}} {
		if _, err := s.ListEventsAfter(ctx, "", bad.after, bad.limit); err == nil {
			t.Fatalf("ListEventsAfter(after %d, limit %d) was accepted", bad.after, bad.limit)
		}
	}
}
