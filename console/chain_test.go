package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/console"
)

// The chain page shows the newest event with its run and the run's hash
// there, and, once an integrator has folded the events, the latest
// checkpoint as verify -head takes it (SIZE:ROOT) and its hash; before any
// fold it says there is none rather than offering an event's hash as the
// head of every run.
func TestConsole_ChainPageShowsTheLatestCheckpointAndTheNewestRunsHead(t *testing.T) {
	r := newSessionRig(t, func(c *console.Config) { c.Store = c.Store.(*countingStore).Store })
	st := r.store.Store
	ctx := context.Background()
	for _, run := range []string{"run-a", "run-b"} {
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
			if err := tx.RunInsert(agentrt.Run{ID: run, Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: consoleT0}); err != nil {
				return err
			}
			_, err := tx.EventAppend(agentrt.Event{RunID: run, At: consoleT0, Type: agentrt.EventRunCreated, Payload: json.RawMessage(`{"goal":"g"}`)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	page := func() string {
		t.Helper()
		resp := r.get("/chain")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/chain = %d %s", resp.StatusCode, b)
		}
		return html.UnescapeString(string(b))
	}
	seq, hash, err := st.ChainHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf(`seq %d, of run run-b. Its run's chain ends there at <code id="head">%d:%s</code>`, seq, seq, hash)
	body := page()
	if !strings.Contains(body, head) || !strings.Contains(body, `No checkpoint yet`) || strings.Contains(body, `id="kept"`) {
		t.Fatalf("/chain before a fold does not show the run's head %q and no checkpoint:\n%s", head, body)
	}
	cs, err := checkpoint.For(st)
	if err != nil {
		t.Fatal(err)
	}
	in, err := checkpoint.NewIntegrator(cs, checkpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, latest, ok, err := in.Fold(ctx)
	if err != nil || !ok || latest.Size != seq {
		t.Fatalf("fold = %+v %v %v", latest, ok, err)
	}
	body = page()
	kept := fmt.Sprintf(`<code id="kept">%s</code>`, latest.Kept())
	if !strings.Contains(body, kept) || !strings.Contains(body, latest.Hash) || !strings.Contains(body, fmt.Sprintf("%d events folded", latest.Size)) ||
		!strings.Contains(body, head) || strings.Contains(body, "No checkpoint yet") {
		t.Fatalf("/chain after a fold does not show %s, its hash and the run's head:\n%s", kept, body)
	}
}
