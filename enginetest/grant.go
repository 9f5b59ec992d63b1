package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// forgeGrant rewrites one column of run-1's approval directly in the
// database, then recomputes and stores the approval's hash, so the row verifies
// against itself and the event chain is untouched.
func forgeGrant(t *testing.T, e *env, approvalID string, edit rowEdit) agentrt.Approval {
	t.Helper()
	ctx := context.Background()
	edit(t, e.db, approvalID)
	a, err := e.Store.GetApproval(ctx, "run-1", approvalID)
	if err != nil {
		t.Fatal(err)
	}
	h, err := agentrt.ApprovalHash(a.Kind, a.Capability, a.Presentation, a.Request)
	if err != nil {
		t.Fatal(err)
	}
	e.db.exec(t, 1, `UPDATE approvals SET hash = ? WHERE id = ?`, h, approvalID)
	a, err = e.Store.GetApproval(ctx, "run-1", approvalID)
	if err != nil || agentrt.VerifyApproval(a) != nil {
		t.Fatalf("the forged approval does not verify: %v", err)
	}
	rep, err := e.Store.VerifyEvents(ctx, 0, 0)
	if err != nil || !rep.Intact() {
		t.Fatalf("VerifyEvents after the forgery = %+v, %v; the chain should be intact", rep, err)
	}
	return a
}

// Whoever can write the database rewrites a granted approval's request (its
// arguments, or the tool it names) and recomputes the approval's hash: the
// row verifies and the chain is intact, but the step's decision recorded in
// the chain still says the original. Resume, by a Driver or a Gate's Attach,
// refuses with ErrApprovalHash naming what differs, runs nothing, asks no
// policy, and writes nothing. A rewrite of another field (the presentation)
// leaves the request alone but the hash no longer the one the chain's
// approval.requested recorded, and is refused the same way.
func caseResume_GrantMustEqualWhatTheChainRecorded(t *testing.T, bk *Backend) {
	ctx := context.Background()
	cases := []struct {
		name  string
		field string
		edit  rowEdit
	}{
		{"arguments", "arguments", jsonEdit("request_json", "/etc/shadow", "args", "path")},
		{"tool", "tool", jsonEdit("request_json", "wipe", "spec", "name")},
		{"hash", "hash", sqlEdit(`UPDATE approvals SET presentation_json = ? WHERE id = ?`, `{"note":"something else"}`)},
	}
	for _, c := range cases {
		for _, via := range []string{"driver", "gate"} {
			t.Run(c.name+" via "+via, func(t *testing.T) {
				e := newEnv(t, bk)
				_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
				e.approve(t, a, "")
				forged := forgeGrant(t, e, a.ID, c.edit)
				before := e.db.snapshot(t)

				send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
				wipe := kit.NewTool("wipe", agentrt.RemoteMutation, kit.PathSchema, nil)
				policy := kit.Recording(agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
					return agentrt.PolicyDecision{Outcome: agentrt.Allow}, nil
				}))
				var err error
				switch via {
				case "driver":
					d := e.Driver(kit.Script(kit.Complete(`{}`)), policy, send, wipe)
					_, err = d.Resume(ctx, "run-1")
				case "gate":
					g, gerr := agentrt.NewGate(agentrt.GateConfig{EngineConfig: agentrt.EngineConfig{Store: e.Store, Policy: policy, Tools: kit.Tools(send, wipe), Now: e.Clock.Now}})
					if gerr != nil {
						t.Fatal(gerr)
					}
					var s *agentrt.GateSession
					s, _, err = g.Attach(ctx, "run-1")
					if s != nil {
						t.Fatalf("Attach of a forged grant opened a session")
					}
				}
				if !errors.Is(err, agentrt.ErrApprovalHash) {
					t.Fatalf("Resume of a forged grant = %v, want ErrApprovalHash", err)
				}
				var mm *agentrt.GrantMismatchError
				if !errors.As(err, &mm) || mm.Field != c.field || mm.ApprovalID != a.ID || mm.Recorded == mm.Granted {
					t.Fatalf("error %v (%+v), want a GrantMismatchError naming %s", err, mm, c.field)
				}
				if c.field == "hash" && (mm.Recorded != a.Hash || mm.Granted != forged.Hash) {
					t.Fatalf("hash mismatch names %s and %s, want %s and %s", mm.Recorded, mm.Granted, a.Hash, forged.Hash)
				}
				if send.N() != 0 || wipe.N() != 0 || policy.N() != 0 {
					t.Fatalf("send ran %d times, wipe %d, policy asked %d; want nothing", send.N(), wipe.N(), policy.N())
				}
				e.db.requireUnchanged(t, before, "a refused Resume of a forged grant")
			})
		}
	}
}

// wholeRunUnread is a store that fails any read of a run's whole event log,
// so a resume that loads the history of a long run to check one grant is
// caught.
type wholeRunUnread struct {
	agentrt.Store
	t testing.TB
}

func (s wholeRunUnread) ListEvents(ctx context.Context, runID string) ([]agentrt.Event, error) {
	s.t.Errorf("ListEvents(%q): a resume read the run's whole event log", runID)
	return s.Store.ListEvents(ctx, runID)
}

// A grant is checked against what the chain recorded for its own step only:
// a resume reads that step's events a page at a time, never the run's whole
// log, which on a long run of big observations would hold the history in
// memory again. The check still refuses a forged grant the same way.
func caseResume_GrantCheckReadsOnlyItsStepsEvents(t *testing.T, bk *Backend) {
	ctx := context.Background()
	for _, forge := range []bool{false, true} {
		e := newEnv(t, bk)
		_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
		e.approve(t, a, "")
		if forge {
			forgeGrant(t, e, a.ID, jsonEdit("request_json", "/etc/shadow", "args", "path"))
		}
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		cfg := e.Config(kit.Script(kit.Complete(`{}`)), agentrt.DefaultPolicy(), send)
		cfg.Store = wholeRunUnread{Store: e.Store, t: t}
		run, err := e.DriverFor(cfg).Resume(ctx, "run-1")
		if forge {
			var gm *agentrt.GrantMismatchError
			if !errors.Is(err, agentrt.ErrApprovalHash) || !errors.As(err, &gm) || gm.Field != "arguments" || send.N() != 0 {
				t.Fatalf("forged grant: Resume = %v, send ran %d times; want ErrApprovalHash on the arguments and nothing run", err, send.N())
			}
			continue
		}
		if err != nil || send.N() != 1 {
			t.Fatalf("Resume = %s, %v; send ran %d times, want once", run.Status, err, send.N())
		}
	}
}

// A run's approval is granted with alice's signature, then a database
// writer swaps the row's signature for another valid one by alice over the
// same approval (a fresh nonce): the key is enrolled, the signature
// verifies and decided_by still matches, but it is not the signature the
// approval.decided event recorded. Resume refuses it as a grant mismatch on
// "signature" and runs nothing.
func caseGrant_SwappedSignatureIsRefused(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	ap, key, send, a := grantSigned(t, e, askApproval, "ok")
	swapped, err := json.Marshal(sign(t, key, ap, statement(e, a, agentrt.StatementApprove, "ok")))
	if err != nil {
		t.Fatal(err)
	}
	e.db.exec(t, 1, `UPDATE approvals SET signature_json = ? WHERE id = ?`, string(swapped), a.ID)
	d := e.Driver(kit.Script(kit.Complete(`{}`)), kit.Fixed(askApproval), send)
	_, err = d.Resume(ctx, "run-1")
	var mm *agentrt.GrantMismatchError
	if !errors.As(err, &mm) || mm.Field != "signature" || mm.Recorded == mm.Granted {
		t.Fatalf("Resume with a swapped signature = %v; want a GrantMismatchError on the signature", err)
	}
	if send.N() != 0 {
		t.Fatalf("send ran %d times under a swapped signature", send.N())
	}
}
