package notify_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
	"github.com/agentrt/agentrt/approver/webhook"
	"github.com/agentrt/agentrt/internal/cli"
)

// One payment is rejected and another left past its 15-minute TTL and
// then decided. Everywhere an operator or a front end reads them they stay
// apart: agentrt runs and show and events, the webhook (the rejection is a
// status, the expiry a 410 and an expired code), and the notifications
// (approval.rejected against approval.expired).
func TestExpiredAndRejected_StayDistinctEverywhereTheyAreShown(t *testing.T) {
	ctx := context.Background()
	f := fixture.New(t)
	rej := f.Start(t, "run-rejected", fixture.Pay(`{"amount":1}`))
	exp := f.Start(t, "run-expired", fixture.Pay(`{"amount":2}`))
	l := approver.New(f.Store, nil)
	l.Now = f.Clock.Now
	secretWH := []byte("0123456789abcdef0123456789abcdef-webhook")
	h, err := webhook.New(webhook.Config{Approver: l, Secret: secretWH, Now: f.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &webhook.Client{Base: srv.URL, Secret: secretWH, HTTP: srv.Client(), Now: f.Clock.Now}
	if _, err := c.Reject(ctx, approver.Answer{RunID: rej.RunID, ApprovalID: rej.ID, Hash: rej.Hash, By: "alice", Note: "no"}); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(fixture.PaymentTTL)
	if _, err := c.Approve(ctx, approver.Answer{RunID: exp.RunID, ApprovalID: exp.ID, Hash: exp.Hash, By: "alice"}); webhook.ErrorCode(err) != webhook.CodeExpired {
		t.Fatalf("approving the expired payment = %v, want expired", err)
	}

	// The webhook.
	shown, err := c.Show(ctx, rej.RunID, rej.ID)
	if err != nil || shown.Status != agentrt.ApprovalRejected || shown.Expired {
		t.Fatalf("the rejected approval through the webhook = %s expired %v, %v", shown.Status, shown.Expired, err)
	}
	if _, err := c.Show(ctx, exp.RunID, exp.ID); webhook.ErrorCode(err) != webhook.CodeExpired {
		t.Fatalf("the expired approval through the webhook = %v, want 410 expired", err)
	}

	// The CLI.
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := cli.Run(append([]string{"-db", f.Path}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("agentrt %s = %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	runs := run("runs")
	for _, want := range []string{"approval_rejected", "approval_expired"} {
		if !strings.Contains(runs, want) {
			t.Fatalf("agentrt runs does not say %s:\n%s", want, runs)
		}
	}
	for id, want := range map[string]string{rej.RunID: "rejected", exp.RunID: "expired"} {
		other := map[string]string{"rejected": "expired", "expired": "rejected"}[want]
		show := run("show", id)
		if !strings.Contains(show, "approval_"+want) || !strings.Contains(show, " "+want+" ") || strings.Contains(show, other) {
			t.Fatalf("agentrt show %s does not say %s alone:\n%s", id, want, show)
		}
		events := run("events", id)
		if !strings.Contains(events, want) || strings.Contains(events, "approval_"+other) {
			t.Fatalf("agentrt events %s does not say %s alone:\n%s", id, want, events)
		}
	}

	// The notifications.
	s := newSink(t, f.Clock)
	r := newRunner(t, f, notify.Target{URL: s.srv.URL, Secret: secret})
	r.untilIdle()
	byRun := map[string][]notify.Type{}
	for _, n := range s.notifications() {
		byRun[n.RunID] = append(byRun[n.RunID], n.Type)
	}
	if g := byRun[rej.RunID]; len(g) != 2 || g[1] != notify.Rejected {
		t.Fatalf("the rejected run's notifications = %v", g)
	}
	if g := byRun[exp.RunID]; len(g) != 2 || g[1] != notify.Expired {
		t.Fatalf("the expired run's notifications = %v", g)
	}
}
