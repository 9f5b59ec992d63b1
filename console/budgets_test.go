package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console"
)

// The budgets page lists each budget with its current window's reserved,
// settled and uncertain amounts, as money (the CLI's rule: dollars to a
// hundredth of a cent, never raw micros) with a bar of the cost ceiling's
// use, read-only: it offers no form, and a POST to it changes nothing.
func TestHandler_BudgetsPageShowsBudgetsReadOnly(t *testing.T) {
	st := openStore(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	op := agentrt.Operator{Store: st, Now: func() time.Time { return now }}
	if _, err := op.AddBudget(context.Background(), agentrt.NewBudget{Name: "acme-daily", Scope: "tenant=acme", Window: agentrt.WindowDay, MaxCost: 50_000_000, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.AddBudget(context.Background(), agentrt.NewBudget{Name: "old<b>", Window: agentrt.WindowNone, MaxTokens: 9, By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.RetireBudget(context.Background(), "old<b>", "carol"); err != nil {
		t.Fatal(err)
	}
	bs, _ := st.ListBudgets(context.Background())
	if _, err := st.Update(context.Background(), func(tx agentrt.Tx) error {
		return tx.BudgetReserve(agentrt.BudgetReservation{CallID: "call-1", BudgetID: bs[0].ID, WindowStart: agentrt.WindowDay.Start(now), RunID: "r", StepID: "s",
			Attempt: 1, Generation: 1, Provider: "p", Model: "m", MaxOutputTokens: 10, Reserved: agentrt.Amount{Cost: 1234, Tokens: 56},
			ExpiresAt: now.Add(time.Hour), CreatedAt: now}, bs[0])
	}); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, st, func(cfg *console.Config) { cfg.Now = func() time.Time { return now } })
	cookie := console.NewTestSession(h, "alice")
	req := httptest.NewRequest("GET", "/budgets", nil)
	req.AddCookie(cookie)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	_, main, _ := strings.Cut(body, `<main`)
	if rec.Code != http.StatusOK || !strings.Contains(body, "acme-daily") || !strings.Contains(body, "tenant=acme") || !strings.Contains(body, "$50.0000") ||
		!strings.Contains(body, "retired by carol") || !strings.Contains(body, "old&lt;b&gt;") || strings.Contains(main, "<form") ||
		!strings.Contains(body, "$0.0012, 56 tokens") || strings.Contains(main, "micros") {
		t.Fatalf("budgets page: %d\n%s", rec.Code, body)
	}
	// The cost ceiling's bar: 1234 of 50000000 micros reserved.
	if !strings.Contains(body, `<meter min="0" max="50000000" value="1234"`) {
		t.Errorf("budgets page has no usage bar of 1234 against 50000000:\n%s", body)
	}
	req = httptest.NewRequest("POST", "/budgets", strings.NewReader("max=1"))
	req.AddCookie(cookie)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /budgets: %d, want 405", rec.Code)
	}
	bs, _ = st.ListBudgets(context.Background())
	if len(bs) != 2 || bs[0].Version != 1 {
		t.Errorf("budgets changed: %+v", bs)
	}
}
