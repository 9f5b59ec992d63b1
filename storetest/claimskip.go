package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
)

// manySkips is more runs than SQLite (32766) or Postgres (65535) takes
// placeholders in one statement.
const manySkips = 70_000

// runClaimSkipsMany claims with a skip list longer than any database's
// limit on placeholders: the claim works, takes the runnable runs not
// skipped, and leaves the skipped one alone.
func runClaimSkipsMany(t *testing.T, s agentrt.Store) {
	for _, id := range []string{"a", "b", "c"} {
		_, err := update(t, s, func(tx agentrt.Tx) error {
			run := newRun(id)
			run.Status, run.LeaseOwner, run.LeaseExpiresAt = agentrt.RunEnqueued, "", time.Time{}
			return tx.RunInsert(run)
		})
		must(t, err)
	}
	skip := make([]string, 0, manySkips+1)
	for i := range manySkips {
		skip = append(skip, fmt.Sprintf("refused-%06d", i))
	}
	skip = append(skip, "b")
	var got []agentrt.Run
	_, err := update(t, s, func(tx agentrt.Tx) error {
		var err error
		got, err = tx.RunClaim(agentrt.RunClaim{Owner: "w", Limit: 10, Now: time.Now(), TTL: time.Minute, Skip: skip})
		return err
	})
	if err != nil {
		t.Fatalf("a claim skipping %d runs: %v", len(skip), err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "a,c" {
		t.Fatalf("a claim skipping b among %d runs took %v, want [a c]", len(skip), ids)
	}
	b, err := s.GetRun(t.Context(), "b")
	must(t, err)
	if b.LeaseOwner != "" || b.Generation != 1 {
		t.Fatalf("the skipped run was leased: owner %q generation %d", b.LeaseOwner, b.Generation)
	}
}
