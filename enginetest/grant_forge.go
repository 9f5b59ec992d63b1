package enginetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

var (
	agentrtBinOnce sync.Once
	agentrtBin     string
	agentrtBinErr  error
)

// agentrtBinary builds the real agentrt binary once for the package's tests.
func agentrtBinary(t *testing.T) string {
	t.Helper()
	agentrtBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentrt-bin-")
		if err != nil {
			agentrtBinErr = err
			return
		}
		agentrtBin = filepath.Join(dir, "agentrt")
		out, err := exec.Command("go", "build", "-o", agentrtBin, "github.com/agentrt/agentrt/cmd/agentrt").CombinedOutput()
		if err != nil {
			agentrtBinErr = errors.New(string(out))
		}
	})
	if agentrtBinErr != nil {
		t.Fatalf("building agentrt: %v", agentrtBinErr)
	}
	return agentrtBin
}

// forgery is one way a writer of the database tries to turn run-1's
// pending approval into a grant.
type forgery struct {
	name string
	// forge rewrites rows; other is run-2's approval, validly signed by
	// the pinned approver.
	forge func(t *testing.T, f *forgeEnv)
}

type forgeEnv struct {
	e        *env
	send     *kit.Counted
	pending  agentrt.Approval         // run-1's
	other    agentrt.Approval         // run-2's, approved with a pinned signature
	mallory  agentrt.EnrolledApprover // enrolled in the database only
	pinned   *agentrt.PinnedKeys
	pinsPath string
	sign     func(ap agentrt.EnrolledApprover, a agentrt.Approval) agentrt.DecisionSignature
}

func (f *forgeEnv) flip(t *testing.T, by, approverID, credentialID, sigJSON string) {
	t.Helper()
	f.e.db.exec(t, 1, `UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?,
		approver_id = ?, credential_id = ?, signature_json = ? WHERE id = ?`,
		by, f.e.Clock.Now().Format(time.RFC3339Nano), approverID, credentialID, sigJSON, f.pending.ID)
}

var forgeries = []forgery{
	{"a_unsigned", func(t *testing.T, f *forgeEnv) { f.flip(t, "forger", "", "", "") }},
	{"b_unsigned_and_requirement_removed", func(t *testing.T, f *forgeEnv) {
		f.flip(t, "forger", "", "", "")
		f.e.db.exec(t, 1, `UPDATE runs SET limits_json = ? WHERE id = 'run-1'`,
			`{"max_steps":50,"max_consecutive_tool_failures":3,"loop_threshold":3}`)
	}},
	{"c_signed_by_a_key_enrolled_only_in_the_database", func(t *testing.T, f *forgeEnv) {
		sig := f.sign(f.mallory, f.pending)
		b, _ := json.Marshal(sig)
		f.flip(t, f.mallory.Name, f.mallory.ID, f.mallory.CredentialID, string(b))
	}},
	{"d_another_approvals_signature_copied", func(t *testing.T, f *forgeEnv) {
		o := f.other
		b, _ := json.Marshal(o.Signature)
		f.flip(t, o.DecidedBy, o.ApproverID, o.CredentialID, string(b))
	}},
}

// newForgeEnv pauses run-1 for approval under RequireSignedGrant with
// alice's key pinned, and grants run-2 with alice's valid signature.
func newForgeEnv(t *testing.T, bk *Backend) *forgeEnv {
	t.Helper()
	ctx := context.Background()
	e := newEnv(t, bk)
	alice, aliceKey := keyApprover(t, e.Operator(), "alice")
	mallory, malloryKey := keyApprover(t, e.Operator(), "mallory")
	keys := map[string]ed25519.PrivateKey{alice.ID: aliceKey, mallory.ID: malloryKey}
	f := &forgeEnv{e: e, mallory: mallory}
	f.sign = func(ap agentrt.EnrolledApprover, a agentrt.Approval) agentrt.DecisionSignature {
		return sign(t, keys[ap.ID], ap, statement(e, a, agentrt.StatementApprove, ""))
	}
	f.pinsPath = filepath.Join(t.TempDir(), "pinned")
	if err := os.WriteFile(f.pinsPath, []byte(agentrt.PinnedLine(alice)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := agentrt.LoadPinnedKeys(f.pinsPath)
	if err != nil {
		t.Fatal(err)
	}
	f.pinned = p
	required := kit.Limits(func(l *agentrt.Limits) { l.RequireSignedGrant = true })
	f.send, f.pending = pausedWith(t, e, askApproval, required)
	d := e.Driver(kit.Script(kit.Call("send", `{"path":"/other"}`)), kit.Fixed(askApproval), f.send)
	if run, err := d.StartWithID(ctx, "run-2", "g", required); err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("run-2: %s, %v", run.Status, err)
	}
	o := kit.PendingApproval(t, e.Store, "run-2")
	if err := e.Operator().ApproveShown(ctx, "run-2", o.ID, o.Hash, "", "", agentrt.WithSignature(f.sign(alice, o))); err != nil {
		t.Fatal(err)
	}
	for _, a := range kit.MustApprovals(t, e.Store, "run-2") {
		if a.ID == o.ID {
			f.other = a
		}
	}
	if f.other.Signature == nil {
		t.Fatal("run-2's approval holds no signature")
	}
	return f
}

// runRows is the part of a snapshot that belongs to run-1: its run, steps
// and approvals, and its events but for the worker's own claims of it.
func runRows(s snapshot, claims bool) snapshot {
	out := snapshot{}
	for table, rows := range s {
		for _, r := range rows {
			if !strings.Contains(r, "=run-1 |") && !strings.HasPrefix(r, "id=run-1 ") {
				continue
			}
			if table == "runs" && claims {
				// The claim leases the run: owner, expiry and generation.
				r = r[:strings.Index(r, " | lease_owner=")]
			}
			if table == "events" {
				if claims && (strings.Contains(r, "type=run.claimed") || strings.Contains(r, "type=lease.released")) {
					continue
				}
				r = r[:strings.Index(r, " | hash=")]
			}
			out[table] = append(out[table], r)
		}
	}
	return out
}

// TestGrant_DatabaseWriterCannotForge pauses run-1 for approval under
// RequireSignedGrant with alice's key pinned, then forges a grant as a raw
// SQL writer: (a) the approval flipped to approved without a signature;
// (b) that, with require_signed_grant also removed from limits_json; (c) a
// signature by a key enrolled only in the database; (d) another approval's
// valid, pinned signature copied onto it. On every path that executes a
// grant (Driver.Resume, a Worker's claim, a Gate's Attach) each executes
// nothing and changes none of run-1's rows (a worker's claim records only
// its lease), and the real 'agentrt verify -decisions -pinned' exits 1
// naming the approval.
func caseGrant_DatabaseWriterCannotForge(t *testing.T, bk *Backend) {
	bin := agentrtBinary(t)
	ctx := context.Background()
	engine := func(f *forgeEnv) agentrt.EngineConfig {
		return agentrt.EngineConfig{Store: f.e.Store, Policy: kit.Fixed(askApproval), Tools: kit.Tools(f.send),
			Now: f.e.Clock.Now, NewID: f.e.IDs, PinnedKeys: f.pinned}
	}
	paths := []struct {
		name   string
		claims bool
		run    func(t *testing.T, f *forgeEnv) error
	}{
		{"Driver", false, func(t *testing.T, f *forgeEnv) error {
			d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: engine(f), Agent: kit.Script(kit.Complete(`{}`))})
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Resume(ctx, "run-1")
			return err
		}},
		{"Gate", false, func(t *testing.T, f *forgeEnv) error { return gateExecutesForged(t, engine(f)) }},
		{"Worker", true, func(t *testing.T, f *forgeEnv) error {
			refused := make(chan error, 16)
			cfg := engine(f)
			cfg.LeaseTTL = time.Second
			w, err := agentrt.NewWorker(agentrt.WorkerConfig{EngineConfig: cfg, Agent: kit.Script(kit.Complete(`{}`)),
				Poll: 5 * time.Millisecond, OnError: func(runID string, err error) {
					if runID == "run-1" {
						refused <- err
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(wctx) }()
			var got error
			select {
			case got = <-refused:
			case <-time.After(time.Minute):
				got = errors.New("the worker reported nothing about run-1 within a minute")
			}
			// Polls go on past the claim's lease: a refused run is not
			// claimed again.
			time.Sleep(1500 * time.Millisecond)
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := len(kit.EventsOf(t, f.e.Store, "run-1", agentrt.EventRunClaimed)); n != 1 {
				t.Errorf("the worker claimed run-1 %d times, want once", n)
			}
			return got
		}},
	}
	for _, p := range paths {
		for _, fg := range forgeries {
			t.Run(p.name+"/"+fg.name, func(t *testing.T) {
				f := newForgeEnv(t, bk)
				fg.forge(t, f)
				before := runRows(f.e.db.snapshot(t), p.claims)
				err := p.run(t, f)
				if !errors.Is(err, agentrt.ErrTamperedRecord) && !errors.Is(err, agentrt.ErrUnsignedGrant) {
					t.Fatalf("%s = %v; want ErrTamperedRecord or ErrUnsignedGrant", p.name, err)
				}
				for _, a := range f.send.Args() {
					if strings.Contains(a, "/report") {
						t.Fatalf("run-1's send ran: %s", a)
					}
				}
				after := runRows(f.e.db.snapshot(t), p.claims)
				for table := range after {
					if strings.Join(before[table], "\n") != strings.Join(after[table], "\n") {
						t.Fatalf("%s changed run-1's %s rows:\nbefore:\n  %s\nafter:\n  %s", p.name, table,
							strings.Join(before[table], "\n  "), strings.Join(after[table], "\n  "))
					}
				}
				var stdout, stderr bytes.Buffer
				cmd := exec.Command(bin, "-db", f.e.db.dsn, "verify", "-decisions", "-pinned", f.pinsPath)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err = cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("verify -decisions -pinned = %v, want exit 1\n%s%s", err, stdout.String(), stderr.String())
				}
				if !strings.Contains(stdout.String(), f.pending.ID) || !strings.Contains(stdout.String(), "run-1") {
					t.Fatalf("verify -decisions -pinned does not name run-1's approval %s:\n%s", f.pending.ID, stdout.String())
				}
			})
		}
	}
}

// gateExecutesForged attaches a Gate built on cfg to run-1 and executes
// the call it holds, if any: the refusal a forged grant must meet, or an
// error saying the Gate accepted it.
func gateExecutesForged(t *testing.T, cfg agentrt.EngineConfig) error {
	ctx := context.Background()
	g, err := agentrt.NewGate(agentrt.GateConfig{EngineConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := g.Attach(ctx, "run-1")
	if err != nil {
		return err
	}
	defer s.Close()
	if o := s.Current(); o != nil {
		if _, err := o.Execute(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("attach = %s with no error; want a refusal", v.Outcome)
}
