package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// voteForgery is one way a writer of the database tries to turn run-1's
// payment, which alice alone voted for, into a grant.
type voteForgery struct {
	name string
	// want is the refusal Resume must give; nil accepts any of the grant
	// refusals.
	want  error
	forge func(t *testing.T, q *quorumEnv, aliceVote agentrt.DecisionSignature)
}

// appendEvent inserts an event row at the chain's end as a raw writer
// would, with a hash it cannot compute.
func appendEvent(t *testing.T, q *quorumEnv, typ agentrt.EventType, payload any) {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := strconv.ParseInt(q.db.column(t, `SELECT MAX(seq) FROM events`), 10, 64)
	q.db.exec(t, 1, `INSERT INTO events (seq, run_id, step_id, at, type, payload_json, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		seq+1, "run-1", q.a.StepID, q.Clock.Now().UTC().Format(time.RFC3339Nano), string(typ), string(b), "forged")
}

func (q *quorumEnv) flip(t *testing.T, by string, sig *agentrt.DecisionSignature) {
	t.Helper()
	sj, id, cred := "", "", ""
	if sig != nil {
		b, _ := json.Marshal(sig)
		sj, id, cred = string(b), sig.ApproverID, sig.CredentialID
	}
	q.db.exec(t, 1, `UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?, note = 'ok',
		approver_id = ?, credential_id = ?, signature_json = ? WHERE id = ?`,
		by, q.Clock.Now().UTC().Format(time.RFC3339Nano), id, cred, sj, q.a.ID)
}

var voteForgeries = []voteForgery{
	{"a_vote_row_inserted_and_the_approval_flipped", nil, func(t *testing.T, q *quorumEnv, _ agentrt.DecisionSignature) {
		q.db.exec(t, 1, `INSERT INTO approval_votes (approval_id, run_id, approver_id, approver_name, stage, decision, note, at)
			VALUES (?, 'run-1', ?, 'bob', 1, 'approve', 'ok', ?)`, q.a.ID, q.aps["bob"].ID, q.Clock.Now().UTC().Format(time.RFC3339Nano))
		q.flip(t, "bob", nil)
	}},
	{"b_flipped_with_the_one_real_vote", nil, func(t *testing.T, q *quorumEnv, v agentrt.DecisionSignature) {
		q.flip(t, "alice", &v)
	}},
	{"c_a_second_vote_by_alice_and_a_decision_in_the_chain", agentrt.ErrQuorumNotMet, func(t *testing.T, q *quorumEnv, v agentrt.DecisionSignature) {
		appendEvent(t, q, agentrt.EventApprovalVoted, agentrt.ApprovalVotedPayload{ApprovalID: q.a.ID, ApproverID: v.ApproverID, By: "alice",
			CredentialID: v.CredentialID, Decision: agentrt.StatementApprove, Note: "ok", Signature: &v, Stage: 1})
		appendEvent(t, q, agentrt.EventApprovalDecided, agentrt.ApprovalDecidedPayload{ApprovalID: q.a.ID, ApproverID: v.ApproverID,
			By: "alice", CredentialID: v.CredentialID, Note: "ok", Signature: &v, Status: agentrt.ApprovalApproved})
		q.flip(t, "alice", &v)
	}},
	{"d_a_vote_by_a_key_enrolled_only_in_the_database", agentrt.ErrQuorumNotMet, func(t *testing.T, q *quorumEnv, v agentrt.DecisionSignature) {
		m := sign(t, q.keys["mallory"], q.aps["mallory"], statement(q.env, q.a, agentrt.StatementApprove, "ok"))
		appendEvent(t, q, agentrt.EventApprovalVoted, agentrt.ApprovalVotedPayload{ApprovalID: q.a.ID, ApproverID: m.ApproverID, By: "mallory",
			CredentialID: m.CredentialID, Decision: agentrt.StatementApprove, Note: "ok", Signature: &m, Stage: 1})
		appendEvent(t, q, agentrt.EventApprovalDecided, agentrt.ApprovalDecidedPayload{ApprovalID: q.a.ID, ApproverID: v.ApproverID,
			By: "alice", CredentialID: v.CredentialID, Note: "ok", Signature: &v, Status: agentrt.ApprovalApproved})
		q.flip(t, "alice", &v)
	}},
}

// TestQuorum_DatabaseWriterCannotForgeAVote: run-1's payment needs two of
// finance under RequireSignedGrant, with alice's, bob's and carol's keys
// pinned; alice votes for real. A raw SQL writer then (a) inserts a vote
// row for bob and flips the approval to approved; (b) flips it with
// alice's one real vote; (c) appends a second copy of alice's vote and a
// decision to the chain; (d) appends a vote by mallory, enrolled and given
// the finance role in the database but not pinned. Through a Driver and a
// Gate each executes nothing and changes none of run-1's rows, and the
// real 'agentrt verify -decisions -pinned' exits 1 naming the approval.
func caseQuorum_DatabaseWriterCannotForgeAVote(t *testing.T, bk *Backend) {
	bin := agentrtBinary(t)
	ctx := context.Background()
	for _, path := range []string{"Driver", "Gate"} {
		for _, fg := range voteForgeries {
			t.Run(path+"/"+fg.name, func(t *testing.T) {
				q, pins, pinsPath := newPinnedQuorum(t, bk)
				v := sign(t, q.keys["alice"], q.aps["alice"], statement(q.env, q.a, agentrt.StatementApprove, "ok"))
				if err := q.Operator().ApproveShown(ctx, "run-1", q.a.ID, q.a.Hash, "", "ok", agentrt.WithSignature(v)); err != nil {
					t.Fatal(err)
				}
				fg.forge(t, q, v)
				before := runRows(q.db.snapshot(t), false)
				err := runForged(t, q, path, pins)
				switch {
				case fg.want != nil && !errors.Is(err, fg.want):
					t.Fatalf("%s = %v; want %v", path, err, fg.want)
				case !errors.Is(err, agentrt.ErrTamperedRecord) && !errors.Is(err, agentrt.ErrUnsignedGrant) && !errors.Is(err, agentrt.ErrQuorumNotMet):
					t.Fatalf("%s = %v; want a refusal of the grant", path, err)
				case q.send.N() != 0:
					t.Fatal("the payment was sent")
				}
				after := runRows(q.db.snapshot(t), false)
				for table := range after {
					if strings.Join(before[table], "\n") != strings.Join(after[table], "\n") {
						t.Fatalf("%s changed run-1's %s rows", path, table)
					}
				}
				var stdout, stderr bytes.Buffer
				cmd := exec.Command(bin, "-db", q.db.dsn, "verify", "-decisions", "-pinned", pinsPath)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err = cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stdout.String(), q.a.ID) {
					t.Fatalf("verify -decisions -pinned = %v, want exit 1 naming %s\n%s%s", err, q.a.ID, stdout.String(), stderr.String())
				}
			})
		}
	}
}

// newPinnedQuorum is a quorumEnv under RequireSignedGrant with mallory
// enrolled in finance too, and alice's, bob's and carol's keys pinned.
func newPinnedQuorum(t *testing.T, bk *Backend) (*quorumEnv, *agentrt.PinnedKeys, string) {
	t.Helper()
	q := newQuorumEnv(t, bk, twoOfFinance(), func(l *agentrt.Limits) { l.RequireSignedGrant = true })
	_, key := keyApprover(t, q.env.Operator(), "mallory")
	m, err := q.Operator().SetApproverAccess(context.Background(), "mallory", agentrt.ApproverAccess{Roles: []string{"finance"}}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	q.aps["mallory"], q.keys["mallory"] = m, key
	path := filepath.Join(t.TempDir(), "pinned")
	var lines []string
	for _, n := range []string{"alice", "bob", "carol"} {
		lines = append(lines, agentrt.PinnedLine(q.aps[n]))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pins, err := agentrt.LoadPinnedKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	return q, pins, path
}

// runForged executes run-1's grant, if any, through a Driver or a Gate
// configured with the pinned keys.
func runForged(t *testing.T, q *quorumEnv, path string, pins *agentrt.PinnedKeys) error {
	ctx := context.Background()
	cfg := agentrt.EngineConfig{Store: q.Store, Policy: kit.Fixed(twoOfFinance()), Tools: kit.Tools(q.send),
		Now: q.Clock.Now, NewID: q.IDs, PinnedKeys: pins}
	if path == "Driver" {
		d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: cfg, Agent: kit.Script(kit.Complete(`{}`))})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Resume(ctx, "run-1")
		return err
	}
	return gateExecutesForged(t, cfg)
}
