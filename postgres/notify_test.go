package postgres_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver/notify"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/agentrt/agentrt/scripted"
)

// The notifier on PostgreSQL, where seqs have gaps and the follower's
// order is not seq order: a notifier stopped while its one notification
// is in flight saves a cursor it can resume from (the event delivered
// before it, not seq - 1, which here is no event), and the next one sends
// the notification.
func TestNotifier_PostgresResumesBeforeAPendingNotificationAcrossASeqGap(t *testing.T) {
	st := open(t, pgtest.Fresh(t))
	defer st.Close()
	ctx := context.Background()
	send := agentrt.ToolFunc{ToolSpec: agentrt.ToolSpec{Name: "send", Description: "send", SideEffect: agentrt.RemoteMutation, Timeout: 10 * time.Second,
		InputSchema: json.RawMessage(`{"type":"object"}`)}, Fn: func(context.Context, agentrt.ToolCall) (agentrt.ToolResult, error) {
		return agentrt.ToolResult{Content: json.RawMessage(`{}`), Summary: "sent"}, nil
	}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: st, Policy: agentrt.DefaultPolicy(), Tools: []agentrt.Tool{send}},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("send", `{}`, "send it")}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := d.Start(ctx, "send", agentrt.DefaultLimits()); err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("run = %s, %v; want it waiting for approval", r.Status, err)
	}
	var requested int64
	if err := st.Pool().QueryRow(ctx, `SELECT seq FROM events WHERE type = 'approval.requested'`).Scan(&requested); err != nil {
		t.Fatal(err)
	}
	// The seq before it becomes a gap, as a rolled-back attempt leaves one.
	if _, err := st.Pool().Exec(ctx, `DELETE FROM events WHERE seq = $1`, requested-1); err != nil {
		t.Fatal(err)
	}
	var answer atomic.Bool
	got := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notify.Notification
		json.NewDecoder(r.Body).Decode(&n)
		got <- string(n.Type)
		if !answer.Load() {
			<-r.Context().Done() // held until the notifier stops
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	cursor := export.FileCursor{Path: filepath.Join(t.TempDir(), "cursor")}
	run := func(stopOnRequest bool) error {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		n, err := notify.New(notify.Config{Store: st, Cursor: cursor, Interval: 5 * time.Millisecond,
			Targets: []notify.Target{{URL: srv.URL, Secret: []byte("0123456789abcdef0123456789abcdef-pg")}},
			Idle: func(int64) {
				if !stopOnRequest {
					cancel()
				}
			}})
		if err != nil {
			return err
		}
		go func() {
			if stopOnRequest {
				<-got
				cancel()
			}
		}()
		return n.Run(rctx)
	}
	if err := run(true); err != nil {
		t.Fatalf("the first notifier: %v", err)
	}
	saved, err := cursor.Load()
	if err != nil || saved >= requested {
		t.Fatalf("cursor %d (%v) after a stop with seq %d in flight; want it before", saved, err, requested)
	}
	answer.Store(true)
	if err := run(false); err != nil {
		t.Fatalf("the restarted notifier: %v", err)
	}
	if typ := <-got; typ != "approval.requested" {
		t.Fatalf("the restarted notifier sent %q, want the pending approval.requested", typ)
	}
	if saved, err := cursor.Load(); err != nil || saved < requested {
		t.Fatalf("cursor %d (%v) after the restart; want past %d", saved, err, requested)
	}
}
