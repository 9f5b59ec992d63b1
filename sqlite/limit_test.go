package sqlite_test

import (
	"context"
	"errors"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
	sqlite3 "modernc.org/sqlite"
	sqlite3lib "modernc.org/sqlite/lib"
)

// A read connection will not hold a value much longer than MaxStoredValue,
// so a crafted value too big for agentrt to have written fails the read
// instead of filling memory, while one at the bound still reads whole.
func TestStore_ReadsRefuseAValueLongerThanTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~50 MB")
	}
	s, p := openTemp(t)
	defer s.Close()
	db := raw(t, p)
	for id, size := range map[string]int{"atTheBound": agentrt.MaxStoredValue, "overTheBound": 2 * agentrt.MaxStoredValue} {
		if _, err := db.Exec(`INSERT INTO runs (id, goal, status, limits_json, created_at) VALUES (?, printf('%.*c', ?, 'g'), 'COMPLETED', '{}', '2026-01-01T00:00:00Z')`, id, size); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	ctx := context.Background()
	r, err := s.GetRun(ctx, "atTheBound")
	if err != nil || len(r.Goal) != agentrt.MaxStoredValue {
		t.Fatalf("a value at the bound: %d bytes, %v; want it read whole", len(r.Goal), err)
	}
	// The first fence: reads measure a value before selecting it, so one
	// over the bound is reported by its size, never loaded.
	over, err := s.GetRun(ctx, "overTheBound")
	if err != nil || over.DecodeError == "" || over.Goal != "" {
		t.Fatalf("a value twice the bound: goal of %d bytes, DecodeError %q, %v; want it reported, not read", len(over.Goal), over.DecodeError, err)
	}
	runs, _, err := s.ListRunsPage(ctx, 10, 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("a page holding a value twice the bound: %d runs, %v", len(runs), err)
	}
	for _, r := range runs {
		if len(r.Goal) > agentrt.MaxPageText+1024 {
			t.Fatalf("a page carried a goal of %d bytes", len(r.Goal))
		}
	}
	// The second fence: a read connection refuses to hold such a value at
	// all, whatever the query. A read-only store's handle is a read
	// connection.
	ro, err := sqlite.OpenExisting(p, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var goal string
	err = ro.DB().QueryRowContext(ctx, "SELECT goal FROM runs WHERE id = 'overTheBound'").Scan(&goal)
	var se *sqlite3.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3lib.SQLITE_TOOBIG {
		t.Fatalf("a read connection loaded a value twice the bound: %d bytes, %v; want SQLITE_TOOBIG", len(goal), err)
	}
	if err := ro.DB().QueryRowContext(ctx, "SELECT goal FROM runs WHERE id = 'atTheBound'").Scan(&goal); err != nil || len(goal) != agentrt.MaxStoredValue {
		t.Fatalf("a read connection refused a value at the bound: %d bytes, %v", len(goal), err)
	}
}
