package approver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
)

func local(f *fixture.Fixture) *approver.Local {
	l := approver.New(f.Store, nil)
	l.Now = f.Clock.Now
	return l
}

// Every refusal is a value a caller branches on: a decision lacking a field
// names it, a missing hash is ErrApprovalChanged, another run's approval is
// not found, a second decision is not pending, and a cancel of an ended run
// is a run-state error. None of them writes.
func TestLocal_ReturnsTypedErrors(t *testing.T) {
	ctx := context.Background()
	f := fixture.New(t)
	a := f.Start(t, "run-a", fixture.Send(`{"to":"a"}`))
	b := f.Start(t, "run-b", fixture.Send(`{"to":"b"}`))
	l := local(f)
	ok := approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: a.Hash, By: "alice"}
	before := f.Take(t)
	for _, c := range []struct {
		name  string
		d     approver.Answer
		field string
		want  error
	}{
		{"no run", approver.Answer{ApprovalID: a.ID, Hash: a.Hash, By: "alice"}, "run_id", approver.ErrDecision},
		{"no approval", approver.Answer{RunID: a.RunID, Hash: a.Hash, By: "alice"}, "approval_id", approver.ErrDecision},
		{"no by", approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: a.Hash}, "by", approver.ErrDecision},
		{"no hash", approver.Answer{RunID: a.RunID, ApprovalID: a.ID, By: "alice"}, "", agentrt.ErrApprovalChanged},
		{"another run's approval", approver.Answer{RunID: a.RunID, ApprovalID: b.ID, Hash: b.Hash, By: "alice"}, "", agentrt.ErrNotFound},
		{"a stale hash", approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: b.Hash, By: "alice"}, "", agentrt.ErrApprovalChanged},
	} {
		for _, decide := range []func(context.Context, approver.Answer) error{l.Approve, l.Reject} {
			err := decide(ctx, c.d)
			if !errors.Is(err, c.want) {
				t.Fatalf("%s: %v, want %v", c.name, err, c.want)
			}
			var de *approver.DecisionError
			if c.field != "" && (!errors.As(err, &de) || de.Field != c.field) {
				t.Fatalf("%s: %v does not name %s", c.name, err, c.field)
			}
		}
	}
	if _, err := l.Show(ctx, a.RunID, b.ID); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("Show of another run's approval = %v, want ErrNotFound", err)
	}
	if _, _, err := l.Pending(ctx, "no-such-run", 10); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("Pending of no run = %v, want ErrNotFound", err)
	}
	f.Unchanged(t, before, "refused decisions")

	if err := l.Approve(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if err := l.Reject(ctx, ok); !errors.Is(err, agentrt.ErrNotPending) {
		t.Fatalf("a second decision = %v, want ErrNotPending", err)
	}
	if err := l.Cancel(ctx, b.RunID, "", "x"); !errors.Is(err, approver.ErrDecision) {
		t.Fatalf("Cancel without by = %v, want ErrDecision", err)
	}
	if err := l.Cancel(ctx, b.RunID, "bob", "stop"); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx, b.RunID, "bob", "again"); !errors.Is(err, agentrt.ErrRunState) {
		t.Fatalf("Cancel of a cancelled run = %v, want ErrRunState", err)
	}
}

// Expiry is judged by the approver's clock: a minute before a payment's
// TTL it is pending, at the TTL it shows as expired and showing writes
// nothing, and a decision on it is recorded by the runtime's expiry path:
// the approval expired, the run cancelled as approval_expired, nothing run.
func TestLocal_ClockJudgesExpiry(t *testing.T) {
	ctx := context.Background()
	f := fixture.New(t)
	a := f.Start(t, "run-1", fixture.Pay(`{"to":"shop","amount":5}`))
	l := local(f)
	f.Clock.Advance(fixture.PaymentTTL - time.Minute)
	if got, err := l.Show(ctx, a.RunID, a.ID); err != nil || got.Expired {
		t.Fatalf("Show before the TTL = expired %v, %v", got.Expired, err)
	}
	f.Clock.Advance(time.Minute)
	before := f.Take(t)
	got, err := l.Show(ctx, a.RunID, a.ID)
	if err != nil || !got.Expired || got.Status != agentrt.ApprovalPending {
		t.Fatalf("Show at the TTL = %s expired %v, %v; want pending and expired", got.Status, got.Expired, err)
	}
	list, _, err := l.Pending(ctx, a.RunID, 5)
	if err != nil || len(list) != 1 || !list[0].Expired {
		t.Fatalf("Pending at the TTL = %+v, %v", list, err)
	}
	f.Unchanged(t, before, "showing an expired approval")

	err = l.Approve(ctx, approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: a.Hash, By: "alice"})
	if !errors.Is(err, agentrt.ErrApprovalExpired) {
		t.Fatalf("Approve past the TTL = %v, want ErrApprovalExpired", err)
	}
	run, _ := f.Store.GetRun(ctx, a.RunID)
	stored, _ := f.Store.GetApproval(ctx, a.RunID, a.ID)
	if run.Status != agentrt.RunCancelled || run.Reason != agentrt.ReasonApprovalExpired || stored.Status != agentrt.ApprovalExpired {
		t.Fatalf("after a decision past the TTL: run %s/%s, approval %s", run.Status, run.Reason, stored.Status)
	}
	if got, _ := l.Show(ctx, a.RunID, a.ID); !got.Expired || got.Status != agentrt.ApprovalExpired {
		t.Fatalf("Show after expiry = %s, expired %v", got.Status, got.Expired)
	}
	if len(f.Calls()) != 0 {
		t.Fatalf("an expired payment ran: %q", f.Calls())
	}
}

// Pending refuses a limit out of range, is empty for a run that is not
// waiting, carries the policy's reason, and bounds what the model chose
// while keeping the stored hash, so a decision on it binds the whole
// request.
func TestLocal_PendingIsBoundedAndCarriesThePolicyReason(t *testing.T) {
	ctx := context.Background()
	f := fixture.New(t)
	long := strings.Repeat("x", 10000)
	a := f.Start(t, "run-1", fixture.Send(`{"to":"`+long+`"}`), fixture.Done())
	l := local(f)
	for _, n := range []int{0, -1, approver.MaxPending + 1} {
		if _, _, err := l.Pending(ctx, a.RunID, n); err == nil {
			t.Fatalf("Pending limit %d was accepted", n)
		}
	}
	list, total, err := l.Pending(ctx, a.RunID, 1)
	if err != nil || total != 1 || len(list) != 1 {
		t.Fatalf("Pending = %d of %d, %v", len(list), total, err)
	}
	p := list[0]
	if p.Reason != "send needs approval" || p.Hash != a.Hash || p.ID != a.ID {
		t.Fatalf("pending = reason %q hash %q id %q", p.Reason, p.Hash, p.ID)
	}
	if len(p.Request.Args) >= len(a.Request.Args) || strings.Contains(string(p.Request.Args), long) {
		t.Fatalf("pending arguments are %d bytes, not bounded", len(p.Request.Args))
	}
	shown, err := l.Show(ctx, a.RunID, a.ID)
	if err != nil || shown.Reason != "send needs approval" || shown.Hash != a.Hash || len(shown.Request.Args) >= len(a.Request.Args) {
		t.Fatalf("Show = reason %q, hash %q, %d bytes of arguments, %v", shown.Reason, shown.Hash, len(shown.Request.Args), err)
	}
	if err := l.Approve(ctx, approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: shown.Hash, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	f.Resume(t, a.RunID, fixture.Send(`{"to":"other"}`), fixture.Done())
	if calls := f.Calls(); len(calls) != 1 || calls[0] != `send {"to":"`+long+`"}` {
		t.Fatalf("calls = %d, want the whole recorded request once", len(calls))
	}
	if list, total, err := l.Pending(ctx, a.RunID, 5); err != nil || len(list) != 0 || total != 0 {
		t.Fatalf("Pending of a finished run = %d of %d, %v; want none", len(list), total, err)
	}
	// A decided approval, no longer on the last step, still shows its reason.
	if shown, err := l.Show(ctx, a.RunID, a.ID); err != nil || shown.Reason != "send needs approval" || shown.Status != agentrt.ApprovalApproved {
		t.Fatalf("Show after the run = %s %q, %v", shown.Status, shown.Reason, err)
	}
}

// Open uses OpenExisting: it creates nothing where there is no database,
// refuses a symbolic link, and decides on a database that exists.
func TestOpen_UsesOpenExisting(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := approver.Open(missing, nil); !errors.Is(err, agentrt.ErrNotFound) {
		t.Fatalf("Open of no file = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created %s", missing)
	}
	f := fixture.New(t)
	a := f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(f.Path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := approver.Open(link, nil); !errors.Is(err, agentrt.ErrSymlink) {
		t.Fatalf("Open of a symlink = %v, want ErrSymlink", err)
	}
	l, err := approver.Open(f.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Approve(context.Background(), approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: a.Hash, By: "alice"}); err != nil {
		t.Fatal(err)
	}
}
