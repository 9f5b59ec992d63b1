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
	_, err = s.GetRun(ctx, "overTheBound")
	var se *sqlite3.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3lib.SQLITE_TOOBIG {
		t.Fatalf("a value twice the bound: %v, want SQLITE_TOOBIG", err)
	}
	if _, _, err := s.ListRunsPage(ctx, 10, 0); !errors.As(err, &se) || se.Code()&0xff != sqlite3lib.SQLITE_TOOBIG {
		t.Fatalf("a page holding a value twice the bound: %v, want SQLITE_TOOBIG", err)
	}
	// A read-only store's connections are read connections too.
	ro, err := sqlite.OpenExisting(p, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.GetRun(ctx, "overTheBound"); !errors.As(err, &se) || se.Code()&0xff != sqlite3lib.SQLITE_TOOBIG {
		t.Fatalf("a read-only store loaded a value twice the bound: %v", err)
	}
}
