package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/enginekit"
	"github.com/agentrt/agentrt/postgres"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// A follower passes over nothing that commits late with a smaller seq:
// seq 1000 commits after 1001 was committed (and could be read), and seq
// 1002 commits after 1003, whose transaction took its id first (so 1003
// sits below the watermark while 1002 is still running). Following in
// passes that resume from the cursor, each event is delivered exactly once.
func TestFollower_PostgresDeliversACommitThatTookASmallerSeqLater(t *testing.T) {
	st := open(t, pgtest.Fresh(t))
	defer st.Close()
	ctx := context.Background()
	enginekit.AppendEvents(t, st, "r", 2)
	cursor := &export.MemCursor{}
	var got []int64
	pass := func() {
		t.Helper()
		f := export.Follower{Store: st, Cursor: cursor, Once: true, PageSize: 1}
		if err := f.Follow(ctx, func(e agentrt.Event) error { got = append(got, e.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	begin := func() pgx.Tx {
		t.Helper()
		tx, err := st.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(ctx) })
		return tx
	}
	exec := func(tx pgx.Tx, q string) {
		t.Helper()
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	insert := func(tx pgx.Tx, seq int64) {
		t.Helper()
		exec(tx, "SET LOCAL session_replication_role = replica")
		exec(tx, fmt.Sprintf(`INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (%d, 'r', '', '2026-01-01T00:00:00Z', 'run.created', '{}', '%064x')`, seq, seq))
	}
	commit := func(tx pgx.Tx) {
		t.Helper()
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	late := begin()
	insert(late, 1000)
	early := begin()
	insert(early, 1001)
	commit(early)
	pass()
	commit(late)

	first := begin()
	exec(first, "SELECT pg_current_xact_id()")
	late = begin()
	insert(late, 1002)
	insert(first, 1003)
	commit(first)
	pass()
	commit(late)

	all := listSeqs(t, st)
	for deadline := time.Now().Add(30 * time.Second); len(got) < len(all) && time.Now().Before(deadline); {
		// Other tests' transactions hold the cluster's watermark back.
		pass()
		time.Sleep(20 * time.Millisecond)
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !slices.Equal(sorted, all) {
		t.Fatalf("delivered seqs %v; want each of %v exactly once", got, all)
	}
}

// listSeqs reads every event's seq in seq order.
func listSeqs(t *testing.T, st *postgres.Store) []int64 {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}
