package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	kit "github.com/agentrt/agentrt/internal/enginekit"
)

// A paused request is approved and resumed by another process whose agent
// would now ask for something else: the request recorded at the pause runs,
// once, and the agent is asked only for the step after it.
func caseApproval_ApproveThenResumeExecutesRecordedRequest(t *testing.T, bk *Backend) {
	ctx := context.Background()
	e := newEnv(t, bk)
	_, a := kit.PausedRun(t, e.Env, `{ "path" : "/report" }`)
	steps := kit.MustSteps(t, e.Store, "run-1")
	if a.StepID != steps[0].ID || a.Kind != string(agentrt.RemoteMutation) || a.Request.Spec.Name != "send" ||
		string(a.Request.Args) != `{"path":"/report"}` || a.Request.RunID != "run-1" || a.Request.StepID != steps[0].ID {
		t.Fatalf("approval = %+v", a)
	}
	if err := agentrt.VerifyApproval(a); err != nil {
		t.Fatalf("stored approval does not verify: %v", err)
	}
	if steps[0].Status != agentrt.StepAwaitingApproval || kit.MustRun(t, e.Store, "run-1").LeaseOwner != "" {
		t.Fatalf("step is %s; run lease %q", steps[0].Status, kit.MustRun(t, e.Store, "run-1").LeaseOwner)
	}

	// A second process, whose agent would now ask for another path.
	other := e.db.open(t)
	send2 := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
	agent2 := kit.Script(kit.Call("send", `{"path":"/etc/shadow"}`), kit.Complete(`{"sent":true}`))
	cfg := e.Config(agent2, agentrt.DefaultPolicy(), send2)
	cfg.Store = other
	d2 := e.DriverFor(cfg)

	before := e.db.snapshot(t)
	if _, err := d2.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("Resume before a decision = %v, want ErrRunState", err)
	}
	e.db.requireUnchanged(t, before, "a Resume before the decision")

	if err := agentrt.ApproveShown(ctx, e.Store, nil, "run-1", a.ID, a.Hash, "alice", "ok"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if err := agentrt.ApproveShown(ctx, e.Store, nil, "run-1", a.ID, a.Hash, "alice", "again"); !errors.Is(err, agentrt.ErrNotPending) {
		t.Fatalf("second Approve = %v, want ErrNotPending", err)
	}
	if run := kit.MustRun(t, e.Store, "run-1"); run.Status != agentrt.RunWaiting {
		t.Fatalf("Approve moved the run to %s; only Resume may", run.Status)
	}
	if send2.N() != 0 {
		t.Fatal("Approve ran the tool")
	}
	resumeCompletes(t, d2, "run-1")
	if got := send2.Args(); !reflect.DeepEqual(got, []string{`{"path":"/report"}`}) {
		t.Fatalf("send ran with %q, want once with the recorded request", got)
	}
	if n := agent2.N.Load(); n != 1 {
		t.Fatalf("the resuming agent was asked %d times, want once (for the next step)", n)
	}
	stored := kit.MustApprovals(t, e.Store, "run-1")
	if len(stored) != 1 || stored[0].Status != agentrt.ApprovalApproved || stored[0].DecidedBy != "alice" || stored[0].Note != "ok" {
		t.Fatalf("approvals = %+v", stored)
	}
	ts := kit.EventsOf(t, e.Store, "run-1", kit.ToolStarted)
	if p := kit.Payload(t, ts[0]); p["approval_id"] != a.ID {
		t.Fatalf("tool start does not name the approval: %s", ts[0].Payload)
	}
	if _, err := d2.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("Resume of a completed run = %v, want ErrRunState", err)
	}
	kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided}, []kit.E{kit.RunResumed, kit.StepPolicy, kit.ToolStarted, kit.ToolFinished}, kit.EvComplete)
}

// An approvals row edited behind the runtime's back no longer matches its
// hash: deciding it and resuming its grant are refused with ErrApprovalHash
// and change nothing; the run can still be cancelled.
func caseApproval_TamperedRowRefused(t *testing.T, bk *Backend) {
	ctx := context.Background()
	edits := []struct {
		name string
		edit rowEdit
	}{
		{"arguments", jsonEdit("request_json", "/etc/shadow", "args", "path")},
		{"tool", jsonEdit("request_json", "read_only", "spec", "side_effect")},
		{"capability", sqlEdit(`UPDATE approvals SET capability_json = '{"args":{"path":"/etc/shadow"},"tool":"send"}' WHERE id = ?`)},
		{"presentation", sqlEdit(`UPDATE approvals SET presentation_json = '{"args":{"path":"/tmp/harmless"},"tool":"send"}' WHERE id = ?`)},
		{"kind", sqlEdit(`UPDATE approvals SET kind = 'read_only' WHERE id = ?`)},
	}
	for _, edit := range edits {
		t.Run("pending "+edit.name, func(t *testing.T) {
			e := newEnv(t, bk)
			_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
			edit.edit(t, e.db, a.ID)
			stored, err := e.Store.GetApproval(ctx, "run-1", a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := agentrt.VerifyApproval(stored); !errors.Is(err, agentrt.ErrApprovalHash) {
				t.Fatalf("VerifyApproval of the edited row = %v, want ErrApprovalHash", err)
			}
			before := e.db.snapshot(t)
			op := e.Operator()
			for name, decide := range map[string]func() error{
				"ApproveShown": func() error { return op.ApproveShown(ctx, "run-1", a.ID, stored.Hash, "op", "") },
				"RejectShown":  func() error { return op.RejectShown(ctx, "run-1", a.ID, stored.Hash, "op", "") },
			} {
				if err := decide(); !errors.Is(err, agentrt.ErrApprovalHash) {
					t.Fatalf("%s of the edited row = %v, want ErrApprovalHash", name, err)
				}
			}
			e.db.requireUnchanged(t, before, "refused decisions")
			run, err := e.Operator().Cancel(ctx, "run-1", "op", "tampered")
			if err != nil || run.Status != agentrt.RunCancelled {
				t.Fatalf("Cancel = %s, %v", run.Status, err)
			}
		})
		t.Run("granted "+edit.name, func(t *testing.T) {
			e := newEnv(t, bk)
			_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
			e.approve(t, a, "")
			edit.edit(t, e.db, a.ID)
			before := e.db.snapshot(t)
			send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
			policy := kit.Recording(agentrt.DefaultPolicy())
			d := e.Driver(kit.Script(kit.Complete(`{}`), kit.Complete(`{}`)), policy, send)
			if _, err := d.Resume(ctx, "run-1"); !errors.Is(err, agentrt.ErrApprovalHash) {
				t.Fatalf("Resume of an edited grant = %v, want ErrApprovalHash", err)
			}
			if send.N() != 0 || policy.N() != 0 {
				t.Fatalf("send ran %d times, policy asked %d times", send.N(), policy.N())
			}
			e.db.requireUnchanged(t, before, "a refused Resume")
			if _, err := d.Cancel(ctx, "run-1", "op", "tampered"); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
		})
	}
}

// staleStore hands every transaction an approvals read that returns the
// approval as it was shown, whatever the row now holds: it stands for a
// decision whose read raced a change.
type staleStore struct {
	agentrt.Store
	shown agentrt.Approval
}

func (s *staleStore) Update(ctx context.Context, fn func(agentrt.Tx) error) ([]agentrt.Event, error) {
	return s.Store.Update(ctx, func(tx agentrt.Tx) error { return fn(staleTx{Tx: tx, shown: s.shown}) })
}

type staleTx struct {
	agentrt.Tx
	shown agentrt.Approval
}

func (t staleTx) ApprovalGet(runID, id string) (agentrt.Approval, error) {
	if id == t.shown.ID {
		return t.shown, nil
	}
	return t.Tx.ApprovalGet(runID, id)
}

// ApproveShown and RejectShown apply only to the approval the operator was
// shown: a row changed since (to another self-consistent approval) is refused
// with ErrApprovalChanged and nothing written, even when the decision's own
// read of it is stale, because the update is conditional on the shown hash.
// Two decisions racing on one approval: exactly one applies.
func caseApproval_ShownDecisionIsAtomic(t *testing.T, bk *Backend) {
	ctx := context.Background()
	// rewrite makes the approval another one that verifies: a new
	// presentation and the hash that goes with it.
	rewrite := func(t *testing.T, e *env, a agentrt.Approval) agentrt.Approval {
		b := a
		b.Presentation = json.RawMessage(`{"note":"something else entirely"}`)
		h, err := agentrt.ApprovalHash(b.Kind, b.Capability, b.Presentation, b.Request)
		if err != nil {
			t.Fatal(err)
		}
		b.Hash = h
		e.db.exec(t, 1, `UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ?`, string(b.Presentation), h, a.ID)
		stored, err := e.Store.GetApproval(ctx, "run-1", a.ID)
		if err != nil || agentrt.VerifyApproval(stored) != nil {
			t.Fatalf("rewritten approval does not verify: %v", err)
		}
		return stored
	}
	t.Run("changed since shown", func(t *testing.T) {
		e := newEnv(t, bk)
		_, shown := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
		now := rewrite(t, e, shown)
		e.requireUndecided(t, shown, "op", agentrt.ErrApprovalChanged, "with the old hash")
		noHash := shown
		noHash.Hash = ""
		e.requireUndecided(t, noHash, "op", agentrt.ErrApprovalChanged, "with no hash")
		if err := e.Operator().ApproveShown(ctx, "run-1", shown.ID, now.Hash, "op", ""); err != nil {
			t.Fatalf("ApproveShown(current hash): %v", err)
		}
		if a, _ := e.Store.GetApproval(ctx, "run-1", shown.ID); a.Status != agentrt.ApprovalApproved {
			t.Fatalf("approval is %s", a.Status)
		}
	})
	t.Run("stale read inside the transaction", func(t *testing.T) {
		for _, approve := range []bool{true, false} {
			e := newEnv(t, bk)
			_, shown := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
			rewrite(t, e, shown)
			before := e.db.snapshot(t)
			op := agentrt.Operator{Store: &staleStore{Store: e.Store, shown: shown}, Now: e.Clock.Now}
			decide := op.RejectShown
			if approve {
				decide = op.ApproveShown
			}
			if err := decide(ctx, "run-1", shown.ID, shown.Hash, "op", ""); !errors.Is(err, agentrt.ErrApprovalChanged) {
				t.Fatalf("decision on a stale read (approve=%v) = %v, want ErrApprovalChanged", approve, err)
			}
			e.db.requireUnchanged(t, before, "a decision on a stale read")
		}
	})
	t.Run("racing decisions", func(t *testing.T) {
		e := newEnv(t, bk)
		_, shown := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
		other := e.db.open(t)
		ops := []agentrt.Operator{{Store: e.Store, Now: e.Clock.Now}, {Store: other, Now: e.Clock.Now}}
		start := make(chan struct{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range ops {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				if i == 0 {
					errs[i] = ops[i].ApproveShown(ctx, "run-1", shown.ID, shown.Hash, "a", "")
				} else {
					errs[i] = ops[i].RejectShown(ctx, "run-1", shown.ID, shown.Hash, "b", "")
				}
			}(i)
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("both decisions applied")
				}
				won = i
			case errors.Is(err, agentrt.ErrNotPending), errors.Is(err, agentrt.ErrRunState):
			default:
				t.Fatalf("decision %d: %v", i, err)
			}
		}
		if won < 0 {
			t.Fatalf("neither decision applied: %v", errs)
		}
		a, _ := e.Store.GetApproval(ctx, "run-1", shown.ID)
		run := kit.MustRun(t, e.Store, "run-1")
		if won == 0 && (a.Status != agentrt.ApprovalApproved || run.Status != agentrt.RunWaiting) ||
			won == 1 && (a.Status != agentrt.ApprovalRejected || run.Status != agentrt.RunCancelled) {
			t.Fatalf("decision %d won, but the approval is %s and the run %s", won, a.Status, run.Status)
		}
		if n := len(kit.EventsOf(t, e.Store, "run-1", kit.ApprDecided)); n != 1 {
			t.Fatalf("%d approval.decided events", n)
		}
	})
}

// ApprovalHash and NeedApproval fail on a value they cannot hash or encode
// rather than hash a stand-in; a stored approval holding such a value is
// refused rather than decided; and a policy handing one fails the run with no
// approval written.
func caseApprovalHash_ErrorsRatherThanSubstituting(t *testing.T, bk *Backend) {
	ctx := context.Background()
	req := agentrt.ToolRequest{RunID: "r", StepID: "s", Args: json.RawMessage(`{"path":"/a"}`),
		Spec: agentrt.ToolSpec{Name: "send", InputSchema: json.RawMessage(kit.PathSchema), SideEffect: agentrt.RemoteMutation, Timeout: 1e9}}
	good, err := agentrt.ApprovalHash("k", json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":1}`), req)
	if err != nil || len(good) != 64 || strings.Trim(good, "0123456789abcdef") != "" {
		t.Fatalf("ApprovalHash = %q, %v", good, err)
	}
	bad := []struct {
		name       string
		capability string
		present    string
		args       string
		schema     string
	}{
		{name: "repeated key in capability", capability: `{"c":1,"c":2}`},
		{name: "unpaired surrogate in presentation", present: `{"p":"\ud800"}`},
		{name: "invalid UTF-8 in presentation", present: "{\"p\":\"\xff\"}"},
		{name: "deep arguments", args: `{"a":` + kit.Nested(256, "1") + `}`},
		{name: "huge number in arguments", args: `{"n":1e100000}`},
		{name: "malformed schema", schema: `{"type":`},
		{name: "malformed capability", capability: `{"c":`},
	}
	for _, b := range bad {
		c, p, r := json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":1}`), req
		if b.capability != "" {
			c = json.RawMessage(b.capability)
		}
		if b.present != "" {
			p = json.RawMessage(b.present)
		}
		if b.args != "" {
			r.Args = json.RawMessage(b.args)
		}
		if b.schema != "" {
			r.Spec.InputSchema = json.RawMessage(b.schema)
		}
		h, err := agentrt.ApprovalHash("k", c, p, r)
		if h != "" || !errors.Is(err, agentrt.ErrInvalidJSON) {
			t.Fatalf("%s: ApprovalHash = %q, %v; want no hash and ErrInvalidJSON", b.name, h, err)
		}
	}
	// Every bound part moves the hash.
	for name, h := range map[string]func() (string, error){
		"kind": func() (string, error) {
			return agentrt.ApprovalHash("k2", json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":1}`), req)
		},
		"capability": func() (string, error) {
			return agentrt.ApprovalHash("k", json.RawMessage(`{"c":2}`), json.RawMessage(`{"p":1}`), req)
		},
		"presentation": func() (string, error) {
			return agentrt.ApprovalHash("k", json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":2}`), req)
		},
		"arguments": func() (string, error) {
			r := req
			r.Args = json.RawMessage(`{"path":"/b"}`)
			return agentrt.ApprovalHash("k", json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":1}`), r)
		},
		"spec": func() (string, error) {
			r := req
			r.Spec.Description = "deletes everything"
			return agentrt.ApprovalHash("k", json.RawMessage(`{"c":1}`), json.RawMessage(`{"p":1}`), r)
		},
	} {
		if got, err := h(); err != nil || got == good {
			t.Fatalf("changing the %s leaves the hash at %q (%v)", name, got, err)
		}
	}
	for name, v := range map[string]any{"func": func() {}, "channel": make(chan int), "NaN": math.NaN()} {
		pd, err := agentrt.NeedApproval("k", "r", v, nil)
		if err == nil || !reflect.DeepEqual(pd, agentrt.PolicyDecision{}) {
			t.Fatalf("NeedApproval(%s) = %+v, %v; want an error and nothing else", name, pd, err)
		}
		pd, err = agentrt.NeedApproval("k", "r", nil, v)
		if err == nil || !reflect.DeepEqual(pd, agentrt.PolicyDecision{}) {
			t.Fatalf("NeedApproval(presentation %s) = %+v, %v", name, pd, err)
		}
	}

	t.Run("policy hands a repeated key", func(t *testing.T) {
		e := newEnv(t, bk)
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		pd := agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "k", Capability: json.RawMessage(`{"c":1,"c":2}`)}
		d := e.Driver(kit.Script(kit.Call("send", `{"path":"/a"}`)), kit.Fixed(pd), send)
		startEnds(t, d, agentrt.DefaultLimits(), agentrt.RunFailed, agentrt.ReasonInternalError)
		if send.N() != 0 || e.db.countRows(t, "SELECT * FROM approvals") != 0 {
			t.Fatal("the tool ran or an approval was written")
		}
	})
	t.Run("stored approval that will not hash", func(t *testing.T) {
		e := newEnv(t, bk)
		_, a := kit.PausedRun(t, e.Env, `{"path":"/report"}`)
		// Valid JSON to a decoder, refused by the canonical encoder: a
		// hash over it would have to be over a stand-in.
		e.db.exec(t, 1, `UPDATE approvals SET capability_json = '{"tool":"send","tool":"rm"}' WHERE id = ?`, a.ID)
		stored, err := e.Store.GetApproval(ctx, "run-1", a.ID)
		if err != nil || stored.DecodeError != "" {
			t.Fatalf("GetApproval = %+v, %v", stored, err)
		}
		if err := agentrt.VerifyApproval(stored); !errors.Is(err, agentrt.ErrApprovalHash) {
			t.Fatalf("VerifyApproval = %v, want ErrApprovalHash", err)
		}
		before := e.db.snapshot(t)
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "op", ""); !errors.Is(err, agentrt.ErrApprovalHash) {
			t.Fatalf("Approve = %v, want ErrApprovalHash", err)
		}
		e.db.requireUnchanged(t, before, "a refused Approve")
	})
}

// A pending approval lives for Limits.ApprovalTTL on the run's clock: a
// decision a moment before the deadline applies; one at the deadline, or a
// Resume after it, records the approval as expired and cancels the run as
// approval_expired in one transaction, running nothing; and deciding it
// after that is ErrNotPending with nothing written.
func caseApproval_PendingApprovalExpiresAfterTheTTL(t *testing.T, bk *Backend) {
	ctx := context.Background()
	const ttl = time.Hour
	pause := func(t *testing.T) (*env, *kit.Counted, *agentrt.Driver, agentrt.Approval) {
		e := newEnv(t, bk)
		send := kit.NewTool("send", agentrt.RemoteMutation, kit.PathSchema, nil)
		d := e.Driver(kit.Script(kit.Call("send", `{"path":"/report"}`), kit.Complete(`{}`)), agentrt.DefaultPolicy(), send)
		run, err := d.StartWithID(ctx, "run-1", "g", kit.Limits(func(l *agentrt.Limits) { l.ApprovalTTL = ttl }))
		if err != nil || run.Status != agentrt.RunWaiting {
			t.Fatalf("Start = %s, %v", run.Status, err)
		}
		a := kit.PendingApproval(t, e.Store, "run-1")
		if want := e.Clock.Now().Add(ttl); !a.ExpiresAt.Equal(want) {
			t.Fatalf("ExpiresAt = %s, want %s", a.ExpiresAt, want)
		}
		return e, send, d, a
	}
	expired := func(t *testing.T, e *env, send *kit.Counted, a agentrt.Approval) {
		t.Helper()
		kit.RequireEnded(t, kit.MustRun(t, e.Store, "run-1"), agentrt.RunCancelled, agentrt.ReasonApprovalExpired)
		got, _ := e.Store.GetApproval(ctx, "run-1", a.ID)
		if got.Status != agentrt.ApprovalExpired || got.DecidedBy != "" || !got.DecidedAt.Equal(e.Clock.Now()) {
			t.Fatalf("approval = %+v", got)
		}
		if st := kit.MustSteps(t, e.Store, "run-1")[0]; st.Status != agentrt.StepFailed {
			t.Fatalf("step is %s", st.Status)
		}
		if send.N() != 0 {
			t.Fatalf("send ran %d times", send.N())
		}
		kit.RequireEvents(t, e.Store, "run-1", kit.EvStart, kit.EvPause, []kit.E{kit.ApprDecided, kit.RunFinished})
		before := e.db.snapshot(t)
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "late", ""); !errors.Is(err, agentrt.ErrNotPending) {
			t.Fatalf("ApproveShown of the expired approval = %v, want ErrNotPending", err)
		}
		e.db.requireUnchanged(t, before, "a decision on an expired approval")
	}
	t.Run("decided just before the deadline", func(t *testing.T) {
		e, send, d, a := pause(t)
		e.Clock.Advance(ttl - time.Nanosecond)
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "alice", ""); err != nil {
			t.Fatalf("ApproveShown within the TTL: %v", err)
		}
		run, err := d.Resume(ctx, "run-1")
		if err != nil || send.N() != 1 {
			t.Fatalf("Resume = %s, %v; send ran %d times", run.Status, err, send.N())
		}
		kit.RequireEnded(t, run, agentrt.RunCompleted, agentrt.ReasonGoalCompleted)
	})
	t.Run("decided at the deadline", func(t *testing.T) {
		e, send, _, a := pause(t)
		e.Clock.Advance(ttl)
		if err := e.Operator().ApproveShown(ctx, "run-1", a.ID, a.Hash, "alice", ""); !errors.Is(err, agentrt.ErrApprovalExpired) {
			t.Fatalf("ApproveShown at the deadline = %v, want ErrApprovalExpired", err)
		}
		expired(t, e, send, a)
	})
	t.Run("resumed after the deadline", func(t *testing.T) {
		e, send, d, a := pause(t)
		e.Clock.Advance(ttl + time.Second)
		run, err := d.Resume(ctx, "run-1")
		if err != nil {
			t.Fatalf("Resume after the deadline: %v", err)
		}
		kit.RequireEnded(t, run, agentrt.RunCancelled, agentrt.ReasonApprovalExpired)
		expired(t, e, send, a)
	})
}
