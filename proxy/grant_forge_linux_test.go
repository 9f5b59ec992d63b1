package proxy

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/sqlite"
)

// TestGrant_DatabaseWriterCannotForge drives the real agentrt-proxy with
// pinned_keys and require_signed_grant. A write validly approved with the
// pinned key runs once. Then, for each of four writes waiting for approval,
// a raw SQL writer forges a grant: (a) the row flipped to approved with no
// signature; (b) that, with require_signed_grant removed from the run's
// limits_json; (c) a signature by a key enrolled only in the database; (d)
// the first write's valid signature copied. The host's repeat of each
// call executes nothing and writes no file, and the real 'agentrt verify
// -decisions -pinned' exits 1 naming the forged approval.
func TestGrant_DatabaseWriterCannotForge(t *testing.T) {
	s := newProcSetup(t)
	ctx := context.Background()
	// The first start creates the database; approvers are enrolled in it
	// and the pinned file written before the second.
	h := s.start(t)
	h.expect("", "fs_read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(s.sandbox, "notes.txt")))
	h.cs.Close()
	h.cmd.Wait()

	st, err := sqlite.OpenExisting(s.db, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	op := agentrt.Operator{Store: st}
	enroll := func(name string) (agentrt.EnrolledApprover, ed25519.PrivateKey) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(pub)
		ap, err := op.EnrollApprover(ctx, agentrt.NewApprover{Name: name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		return ap, priv
	}
	alice, aliceKey := enroll("alice")
	mallory, malloryKey := enroll("mallory")
	sign := func(key ed25519.PrivateKey, ap agentrt.EnrolledApprover, a agentrt.Approval) agentrt.DecisionSignature {
		sig, err := agentrt.SignStatement(key, ap, agentrt.Statement{RunID: a.RunID, ApprovalID: a.ID, ApprovalHash: a.Hash,
			Decision: agentrt.StatementApprove, Nonce: agentrt.NewNonce(), Time: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	pins := writeFile(t, filepath.Join(s.dir, "pinned"), agentrt.PinnedLine(alice)+"\n")
	var cfg map[string]any
	b, err := os.ReadFile(s.config)
	if err != nil || json.Unmarshal(b, &cfg) != nil {
		t.Fatalf("reading %s: %v", s.config, err)
	}
	cfg["pinned_keys"], cfg["require_signed_grant"] = "pinned", true
	b, _ = json.MarshalIndent(cfg, "", "  ")
	writeFile(t, s.config, string(b))
	h = s.start(t)

	approval := func(runID, id string) agentrt.Approval {
		t.Helper()
		a, err := st.GetApproval(ctx, runID, id)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	write := func(name string) (string, string) {
		target := filepath.Join(s.sandbox, name)
		return target, fmt.Sprintf(`{"path":%q,"content":"%s"}`, target, name)
	}
	// A valid, pinned, signed grant runs.
	target, args := write("signed.txt")
	h.expect(StatusPendingApproval, "fs_write_file", args)
	run, id, _ := h.lastApproval(1)
	valid := approval(run, id)
	if err := op.ApproveShown(ctx, run, id, valid.Hash, "", "", agentrt.WithSignature(sign(aliceKey, alice, valid))); err != nil {
		t.Fatal(err)
	}
	h.expect("", "fs_write_file", args)
	if got, err := os.ReadFile(target); err != nil || string(got) != "signed.txt" {
		t.Fatalf("the validly signed write: %q %v", got, err)
	}
	valid = approval(run, id)
	starts := s.toolStarts(t)

	db := st.DB()
	flip := func(a agentrt.Approval, by, approverID, credentialID, sigJSON string) {
		t.Helper()
		res, err := db.Exec(`UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?, approver_id = ?,
			credential_id = ?, signature_json = ? WHERE id = ?`, by, time.Now().UTC().Format(time.RFC3339Nano), approverID, credentialID, sigJSON, a.ID)
		if n, _ := res.RowsAffected(); err != nil || n != 1 {
			t.Fatalf("forging %s: %v (%d rows)", a.ID, err, n)
		}
	}
	// requireSigned rewrites a run's limits behind the runtime's back.
	requireSigned := func(runID string, on bool) {
		t.Helper()
		r, err := st.GetRun(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		l := r.Limits
		l.RequireSignedGrant = on
		lb, _ := json.Marshal(l)
		if _, err := db.Exec(`UPDATE runs SET limits_json = ? WHERE id = ?`, string(lb), runID); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		forge func(a agentrt.Approval)
	}{
		{"a_unsigned", func(a agentrt.Approval) { flip(a, "forger", "", "", "") }},
		{"b_unsigned_and_requirement_removed", func(a agentrt.Approval) {
			flip(a, "forger", "", "", "")
			requireSigned(a.RunID, false)
		}},
		{"c_signed_by_a_key_enrolled_only_in_the_database", func(a agentrt.Approval) {
			sb, _ := json.Marshal(sign(malloryKey, mallory, a))
			flip(a, mallory.Name, mallory.ID, mallory.CredentialID, string(sb))
		}},
		{"d_another_approvals_signature_copied", func(a agentrt.Approval) {
			sb, _ := json.Marshal(valid.Signature)
			flip(a, valid.DecidedBy, valid.ApproverID, valid.CredentialID, string(sb))
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, args := write(c.name + ".txt")
			h.expect(StatusPendingApproval, "fs_write_file", args)
			run, id, _ := h.lastApproval(2 + i)
			a := approval(run, id)
			c.forge(a)
			got, _, err := h.call("fs_write_file", args)
			if err != nil || !strings.HasPrefix(got, "UNAVAILABLE:") {
				t.Fatalf("the forged grant's call answered %q, %v; want UNAVAILABLE", got, err)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("the forged grant wrote %s: %v", target, err)
			}
			if n := s.toolStarts(t); n != starts {
				t.Fatalf("write started %d times, want %d", n, starts)
			}
			out, err := exec.Command(s.agentrtBin, "-db", s.db, "verify", "-decisions", "-pinned", pins).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), id) {
				t.Fatalf("verify -decisions -pinned = %v, want exit 1 naming %s:\n%s", err, id, out)
			}
			// Later cases forge their own approval and verify names the
			// first bad row: put this one back as it was, and cancel its
			// run through the operator.
			if _, err := db.Exec(`UPDATE approvals SET status = 'pending', decided_by = '', decided_at = '', approver_id = '',
				credential_id = '', signature_json = '' WHERE id = ?`, a.ID); err != nil {
				t.Fatal(err)
			}
			requireSigned(a.RunID, true)
			if _, err := op.Cancel(ctx, run, "test", "forged"); err != nil {
				t.Fatalf("cancel %s: %v", run, err)
			}
		})
	}
}
