package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/postgres/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// Another process's claimer holds the two oldest runnable runs in its open
// transaction: a claim of two takes the next two at once, without waiting
// for that transaction, though it reads its candidates before it locks any
// (the lock takes from a surplus of them, not only the oldest two).
func TestClaim_TakesTheNextRunsWhereAnotherClaimerHoldsTheOldest(t *testing.T) {
	dsn := pgtest.Fresh(t)
	ctx := context.Background()
	st := open(t, dsn)
	defer st.Close()
	now := time.Now().UTC()
	for i := range 6 {
		if _, err := st.Update(ctx, func(tx agentrt.Tx) error {
			return tx.RunInsert(agentrt.Run{ID: fmt.Sprintf("r%d", i), Goal: "g", Status: agentrt.RunEnqueued,
				Limits: agentrt.DefaultLimits(), CreatedAt: now})
		}); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	htx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer htx.Rollback(ctx)
	if _, err := htx.Exec(ctx, `SELECT id FROM runs WHERE id IN ('r0', 'r1') FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var got []string
	if _, err := st.Update(cctx, func(tx agentrt.Tx) error {
		runs, err := tx.RunClaim(agentrt.RunClaim{Owner: "w2", Limit: 2, Now: time.Now(), TTL: time.Minute})
		got = got[:0]
		for _, r := range runs {
			got = append(got, r.ID)
		}
		return err
	}); err != nil {
		t.Fatalf("the claim waited for the holder or failed: %v", err)
	}
	if fmt.Sprint(got) != "[r2 r3]" {
		t.Fatalf("claimed %v, want [r2 r3]: the next runs after the held ones", got)
	}
	if err := htx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
