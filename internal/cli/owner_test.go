package cli

import (
	"fmt"
	"os"
	"testing"
)

// A runs database another account owns is refused in one sentence naming
// both accounts, read-only or not, and nothing in it is decided. Root could
// write the file, so only the owner check stands between it and a forged
// approval; the test needs root to give the file away.
func TestOpen_DatabaseAnotherAccountOwnsRefusedWithOneSentence(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another account")
	}
	f := newFixture(t)
	if err := os.Chown(f.path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("is owned by user 65534, not by you (user %d)", os.Geteuid())
	oneSentence(t, f.run(t, nil, "-db", f.path, "runs"), want)
	oneSentence(t, f.run(t, nil, "-db", f.path, "approve", f.small, "-yes", "-by", "op"), "can forge any approval in it")
	if err := os.Chown(f.path, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := approvalStatus(t, f.path, f.small); len(got) != 1 || got[0] != "pending" {
		t.Errorf("approvals %v, want still pending", got)
	}
}
