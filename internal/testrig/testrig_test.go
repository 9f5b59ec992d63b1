package testrig_test

import (
	"context"
	"os"
	"testing"

	"github.com/agentrt/agentrt/internal/testrig"
)

// DB is an open, empty runs database in its own directory.
func TestRig_FreshDatabase(t *testing.T) {
	st, path := testrig.DB(t)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if runs, err := st.ListRuns(context.Background()); err != nil || len(runs) != 0 {
		t.Fatalf("a fresh database lists %v, %v", runs, err)
	}
}
