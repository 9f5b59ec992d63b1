package console_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console/consoletest"
	"github.com/agentrt/agentrt/scripted"
	"github.com/chromedp/chromedp"
)

// A live page shows a change committed after the page was rendered and
// before its stream opened: the run is cancelled by another writer just
// as the page asks for /events, so the stream, counting from the chain's
// head when it opens, never announces it; the page still turns CANCELLED
// without a reload, because it fetches itself once when its stream opens.
func TestBrowser_LivePageShowsAChangeMadeBeforeItsStreamOpened(t *testing.T) {
	ctx := context.Background()
	e := newConsoleEnv(t)
	b := consoletest.NewBrowser(t)
	invitation := e.invite("carol")
	run := e.startWaiting(e.driver(ask, hostileCall("late"), scripted.Complete(`{}`)), "a run cancelled elsewhere")
	b.Enroll(t, invitation)

	var once sync.Once
	cancelled := make(chan error, 1)
	hook := func(r *http.Request) {
		if r.URL.Path != "/events" {
			return
		}
		once.Do(func() {
			_, err := (agentrt.Operator{Store: e.store}).Cancel(ctx, run.ID, "elsewhere", "cancelled from another process")
			cancelled <- err
		})
	}
	// Only the run page's stream: the inbox's own stream may already be
	// open, and streams reopened later find the run cancelled anyway.
	b.Do(t, "leave the live inbox", chromedp.Navigate(e.origin+"/chain"))
	b.WaitFor(t, "the chain page", `document.querySelector("#chain-status") !== null`)
	e.before.Store(&hook)
	b.Do(t, "the run's page", chromedp.Navigate(e.origin+"/runs/"+run.ID))
	b.WaitFor(t, "the run's page following the log", `document.body.dataset.following === "1"`)
	if err := <-cancelled; err != nil {
		t.Fatalf("cancelling the run as the stream opened: %v", err)
	}
	b.WaitFor(t, "the cancelled run, without a reload", `document.getElementById("run-status").textContent.startsWith("CANCELLED")`)
	b.NoViolations(t)
}
