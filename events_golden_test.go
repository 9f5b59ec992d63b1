package agentrt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt"
)

// Databases written by the runtime at schema versions 1, 2 and 3 (by
// 'agentrt demo -auto-approve' built at 42bf8eb, f8f23de and d1a0990, so
// the migrations that made them are the ones released): each migrates
// forward, its chain verifies, and every event in it, of every type
// present, decodes through the catalogue to its type.
func TestEvents_OldDatabasesDecodeAndVerify(t *testing.T) {
	ctx := context.Background()
	for v := 1; v <= 3; v++ {
		t.Run(fmt.Sprintf("schema%d", v), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "events", fmt.Sprintf("schema%d.db", v)))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "old.db")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			st := openAt(t, p)
			defer st.Close()
			rep, err := st.VerifyEvents(ctx, 0, 0)
			if err != nil || rep.Break != nil || rep.Checked < 30 {
				t.Fatalf("verify = %+v, %v; want an unbroken chain of the demo's events", rep, err)
			}
			evs, err := st.ListEventsAfter(ctx, "", 0, 100000)
			if err != nil {
				t.Fatal(err)
			}
			types := map[agentrt.EventType]bool{}
			for _, ev := range evs {
				p, err := agentrt.DecodePayload(ev)
				if err != nil {
					t.Errorf("event %d: %v", ev.Seq, err)
					continue
				}
				// Nothing the old runtime wrote is lost in the decoding: the
				// type encodes back to the bytes stored.
				if re, err := json.Marshal(p); err != nil || !bytes.Equal(re, ev.Payload) {
					t.Errorf("event %d (%s): %T encodes back to\n%s\nnot\n%s", ev.Seq, ev.Type, p, re, ev.Payload)
				}
				types[ev.Type] = true
			}
			for _, typ := range []agentrt.EventType{agentrt.EventRunCreated, agentrt.EventStepDecided, agentrt.EventToolStarted,
				agentrt.EventApprovalRequest, agentrt.EventApprovalDecided, agentrt.EventModelCompleted, agentrt.EventRunFinished} {
				if !types[typ] {
					t.Errorf("no %s event in the version-%d database", typ, v)
				}
			}
		})
	}
}
