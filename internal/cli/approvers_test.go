package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

// An operator makes a key with keygen, enrolls it with approvers add, and
// approves with approve -key: the approval is signed, decided_by is the
// approver's name, and verify -decisions passes. One byte changed in the
// stored signature makes verify -decisions fail (exit 1) naming the
// approval. approvers list shows who enrolled the key; remove records it.
func TestApprovers_KeyFileSignsFromTheCLIAndVerifyDecisionsChecksIt(t *testing.T) {
	f := newFixture(t)
	key := filepath.Join(t.TempDir(), "bot.key")
	if r := f.run(t, nil, "approvers", "keygen", "-out", key); r.code != ExitOK {
		t.Fatalf("keygen: %d %s", r.code, r.stderr)
	}
	// A second keygen to the same file refuses, and the first key stays.
	kept, _ := os.ReadFile(key)
	if r := f.run(t, nil, "approvers", "keygen", "-out", key); r.code != ExitFailure || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("keygen over a key: %d %s", r.code, r.stderr)
	}
	if now, _ := os.ReadFile(key); len(kept) == 0 || string(now) != string(kept) {
		t.Fatal("keygen over a key changed it")
	}
	if r := f.run(t, nil, "-db", f.path, "approvers", "add", "deploy-bot", "-key", key+".pub", "-by", "admin"); r.code != ExitOK {
		t.Fatalf("approvers add: %d %s", r.code, r.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "approvers", "list"); r.code != ExitOK || !strings.Contains(r.stdout, "deploy-bot") || !strings.Contains(r.stdout, "by admin") {
		t.Fatalf("approvers list: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r := f.run(t, nil, "-db", f.path, "approve", f.big, "-approval", f.bigApproval, "-key", key)
	if r.code != ExitOK {
		t.Fatalf("approve -key: %d %s", r.code, r.stderr)
	}
	st, err := sqlite.OpenExisting(f.path, true)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.GetApproval(context.Background(), f.big, f.bigApproval)
	st.Close()
	if err != nil || a.Signature == nil || a.DecidedBy != "deploy-bot" {
		t.Fatalf("approval = by %q signature %v, %v", a.DecidedBy, a.Signature, err)
	}
	if r := f.run(t, nil, "-db", f.path, "verify", "-decisions"); r.code != ExitOK || !strings.Contains(r.stdout, "decisions: 1 signed") {
		t.Fatalf("verify -decisions: %d %q %s", r.code, r.stdout, r.stderr)
	}
	// One byte of the stored signature changed.
	db := rawDB(t, f.path)
	sig := *a.Signature
	sig.Signature[0] ^= 1
	b, _ := json.Marshal(sig)
	exec(t, db, `UPDATE approvals SET signature_json = ? WHERE id = ?`, string(b), f.bigApproval)
	r = f.run(t, nil, "-db", f.path, "-json", "verify", "-decisions")
	if r.code != ExitFailure {
		t.Fatalf("verify -decisions after a changed signature: %d %q", r.code, r.stdout)
	}
	var rep verifyReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Decisions == nil || rep.Decisions.Failure == nil ||
		rep.Decisions.Failure.ApprovalID != f.bigApproval || !rep.Intact {
		t.Fatalf("report = %s (%v)", r.stdout, err)
	}
	if r := f.run(t, nil, "-db", f.path, "approvers", "remove", "deploy-bot", "-by", "admin"); r.code != ExitOK {
		t.Fatalf("approvers remove: %d %s", r.code, r.stderr)
	}
	if r := f.run(t, nil, "-db", f.path, "approvers", "list"); !strings.Contains(r.stdout, "removed") {
		t.Fatalf("approvers list after remove: %q", r.stdout)
	}
}

// A run that requires signed grants refuses an unsigned approve (exit 1,
// still pending), and accepts one signed with an enrolled key. A key file
// others can read is refused before anything is opened.
func TestApprove_RunRequiringSignedGrantsRefusesAnUnsignedApproval(t *testing.T) {
	f := &fixture{path: filepath.Join(t.TempDir(), "runs.db"), clock: newClock(), ids: newCounter()}
	st, err := sqlite.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store:  st,
			Tools:  fixtureTools,
			Policy: agentrt.SideEffectPolicy{agentrt.LocalMutation: agentrt.RequireApproval},
			Now:    f.clock.Now,
			NewID:  f.ids.ID,
		},
		Agent: &scripted.Agent{Decisions: []agentrt.Decision{scripted.ToolCall("write", `{"path":"x"}`, "w")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := agentrt.DefaultLimits()
	l.RequireSignedGrant = true
	run, err := d.Start(context.Background(), "g", l)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := f.run(t, nil, "-db", f.path, "approve", run.ID, "-yes", "-by", "op")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "signature") {
		t.Fatalf("unsigned approve: %d %s", r.code, r.stderr)
	}
	if got := approvalStatus(t, f.path, run.ID); len(got) != 1 || got[0] != "pending" {
		t.Fatalf("approvals after a refused approve: %v", got)
	}
	key := filepath.Join(t.TempDir(), "k")
	f.run(t, nil, "approvers", "keygen", "-out", key)
	f.run(t, nil, "-db", f.path, "approvers", "add", "alice", "-key", key, "-by", "admin")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.run(t, nil, "-db", f.path, "approve", run.ID, "-yes", "-key", key); r.code != ExitUsage {
		t.Fatalf("approve with a readable key file: %d %s", r.code, r.stderr)
	}
	os.Chmod(key, 0o600)
	if r := f.run(t, nil, "-db", f.path, "approve", run.ID, "-yes", "-key", key); r.code != ExitOK {
		t.Fatalf("signed approve: %d %s", r.code, r.stderr)
	}
	if got := approvalStatus(t, f.path, run.ID); got[0] != "approved" {
		t.Fatalf("approvals after a signed approve: %v", got)
	}
}
