package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// The runs page names each run by the short id the CLI's trail prints
// (trace.ShortRunID), which agentrt show accepts back: a proxy session's
// run keeps its session name and 8 characters after it, an engine id 16
// characters, never 12 characters and an ellipsis that every run of one
// session, or of one minute, shares.
func TestHandler_RunsPageNamesRunsByTheCLIsShortID(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ids := map[string]string{
		"claude-desktop.4f1e9a0c77d2b315":  "claude-desktop.4f1e9a0c",
		"0190aabbccdd5e6f7a8b9c0d1e2f3a4b": "0190aabbccdd5e6f",
	}
	for id := range ids {
		r := agentrt.Run{ID: id, Goal: "g", Status: agentrt.RunRunning, Limits: agentrt.DefaultLimits(), CreatedAt: t0, StartedAt: t0}
		if _, err := st.Update(context.Background(), func(tx agentrt.Tx) error { return tx.RunInsert(r) }); err != nil {
			t.Fatal(err)
		}
	}
	body := signedIn(t, st)("/runs").Body.String()
	for id, short := range ids {
		if want := `<a href="/runs/` + id + `"><code>` + short + `</code></a>`; !strings.Contains(body, want) {
			t.Errorf("the runs page does not name run %s as %s:\n%s", id, short, body)
		}
	}
}
