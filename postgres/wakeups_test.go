package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// notifiedBy commits fn on st and reports whether the commit notified idle
// workers of schema. It then sends a marker notification of its own and
// reads the listener's notifications up to the marker: PostgreSQL delivers
// them in commit order, so anything fn's commit sent arrives before the
// marker, and nothing is left to arrive after it. Notifications naming
// another schema (other tests' on the same cluster) are not counted.
func notifiedBy(t *testing.T, st interface {
	Update(context.Context, func(agentrt.Tx) error) ([]agentrt.Event, error)
}, listener *pgx.Conn, schema string, marker int, fn func(agentrt.Tx) error) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
	mark := "marker-" + strconv.Itoa(marker)
	if _, err := listener.Exec(ctx, "SELECT pg_notify('agentrt_runnable', $1)", mark); err != nil {
		t.Fatal(err)
	}
	notified := false
	for {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("waiting for the marker notification: %v", err)
		}
		if n.Payload == mark {
			return notified
		}
		if n.Payload == schema {
			notified = true
		}
	}
}

// Which commits wake idle workers: a run enqueued, its lease released at a
// step boundary, its lease released at a pause. A claim, a start and an
// end make nothing claimable and must not notify: each notifying commit
// takes PostgreSQL's one NOTIFY lock through its WAL flush, and a claim
// that notified woke every idle worker into a claim that found nothing.
func TestWakeups_OnlyCommitsThatMakeARunClaimableNotify(t *testing.T) {
	dsn := pgtest.Fresh(t)
	ctx := context.Background()
	st := open(t, dsn)
	defer st.Close()
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN agentrt_runnable"); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := listener.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	const ttl = time.Minute
	var gen int64
	claim := func(tx agentrt.Tx) error {
		runs, err := tx.RunClaim(agentrt.RunClaim{Owner: "w1", Limit: 1, Now: time.Now(), TTL: ttl})
		if err == nil && len(runs) != 1 {
			t.Fatalf("claimed %d runs, want 1", len(runs))
		}
		if err == nil {
			gen = runs[0].Generation + 1
		}
		return err
	}
	leased := func(status agentrt.RunStatus, u agentrt.RunUpdate) func(agentrt.Tx) error {
		return func(tx agentrt.Tx) error {
			u.ID, u.From, u.CheckLease, u.Owner, u.Generation = "r1", []agentrt.RunStatus{status}, true, "w1", gen
			if u.BumpGeneration {
				gen++
			}
			return tx.RunUpdate(u)
		}
	}
	now := time.Now().UTC()
	steps := []struct {
		name   string
		fn     func(agentrt.Tx) error
		notify bool
	}{
		{"enqueue", func(tx agentrt.Tx) error {
			return tx.RunInsert(agentrt.Run{ID: "r1", Goal: "g", Status: agentrt.RunEnqueued, Limits: agentrt.DefaultLimits(), CreatedAt: now})
		}, true},
		{"claim of the enqueued run", claim, false},
		{"start", leased(agentrt.RunEnqueued, agentrt.RunUpdate{Status: agentrt.RunRunning, StartedAt: now,
			SetLease: true, LeaseOwner: "w1", LeaseTTL: ttl, BumpGeneration: true}), false},
		{"release at a step boundary", leased(agentrt.RunRunning, agentrt.RunUpdate{SetLease: true}), true},
		{"claim of the released run", claim, false},
		{"release at a pause", leased(agentrt.RunRunning, agentrt.RunUpdate{Status: agentrt.RunWaiting, SetLease: true}), true},
		{"end of a claimed run", func(tx agentrt.Tx) error {
			return tx.RunUpdate(agentrt.RunUpdate{ID: "r1", From: []agentrt.RunStatus{agentrt.RunWaiting}, Status: agentrt.RunCancelled,
				Reason: agentrt.ReasonOperatorCancelled, FinishedAt: now, SetLease: true})
		}, false},
	}
	for i, s := range steps {
		if got := notifiedBy(t, st, listener, schema, i, s.fn); got != s.notify {
			t.Errorf("%s: notified = %v, want %v", s.name, got, s.notify)
		}
	}
}
