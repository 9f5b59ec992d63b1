package testrig_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/testrig"
)

// DB is an open, empty runs database in its own directory; the clock moves
// only when told, either way.
func TestRig_FreshDatabaseAndAHandMovedClock(t *testing.T) {
	st, path := testrig.DB(t)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if runs, err := st.ListRuns(context.Background()); err != nil || len(runs) != 0 {
		t.Fatalf("a fresh database lists %v, %v", runs, err)
	}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := testrig.NewClock(t0)
	if !c.Now().Equal(t0) || !c.Now().Equal(t0) {
		t.Fatal("the clock moved by itself")
	}
	c.Advance(time.Minute)
	c.Advance(-2 * time.Minute)
	if want := t0.Add(-time.Minute); !c.Now().Equal(want) {
		t.Fatalf("Now = %v, want %v", c.Now(), want)
	}
}
