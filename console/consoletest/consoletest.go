// Package consoletest drives the console in a real browser for tests:
// headless Chromium (Debian's chromium, through chromedp) with Chrome's
// virtual WebAuthn authenticator, so that the console's real passkey
// ceremonies run, and every Content Security Policy violation a page
// reports is collected. The console's own browser tests use it, and so
// does docs/postgres.md's walkthrough test (in the cmd module), which
// enrolls with the URL `agentrt approvers invite` printed and reads the
// console the walkthrough started.
//
// It is test support: its API may change in any release.
package consoletest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// Timeout bounds each browser action and each wait: generous, because the
// tests run on small machines shared with other builds.
const Timeout = 60 * time.Second

// ChromiumPath finds Debian's chromium (or another Chrome on PATH). Under
// CI=true a test that cannot find one fails: the browser tests are the
// console's proof. Elsewhere it skips, saying how to install it.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH; make test installs it (make chromium)")
	}
	t.Skip("no chromium on PATH; install it with 'make chromium' (or apt-get install chromium) to run the browser tests")
	return ""
}

// Browser is one headless Chromium with a virtual authenticator (user
// verification on, presence automatic), closed when the test ends.
type Browser struct {
	ctx        context.Context
	mu         sync.Mutex
	violations []string
}

// NewBrowser starts Chromium for the test.
func NewBrowser(t testing.TB) *Browser {
	t.Helper()
	exe := ChromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b := &Browser{ctx: ctx}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdplog.EventEntryAdded:
			if e.Entry != nil && (strings.Contains(e.Entry.Text, "Content Security Policy") || strings.Contains(e.Entry.Text, "Refused to")) {
				b.add("log: " + e.Entry.Text)
			}
		case *runtime.EventConsoleAPICalled:
			for _, a := range e.Args {
				if a != nil && strings.HasPrefix(strings.Trim(string(a.Value), `"`), "CSP violation") {
					b.add("page: " + string(a.Value))
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		// Every document reports its own violations too, before any of
		// its script runs.
		if _, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `document.addEventListener("securitypolicyviolation", e => console.error("CSP violation " + e.violatedDirective + " " + e.blockedURI));`}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
		return err
	}))
	if err != nil {
		t.Fatalf("starting chromium with a virtual authenticator: %v", err)
	}
	return b
}

// Context is the browser tab's chromedp context, for actions this package
// has no helper for.
func (b *Browser) Context() context.Context { return b.ctx }

func (b *Browser) add(v string) {
	b.mu.Lock()
	b.violations = append(b.violations, v)
	b.mu.Unlock()
}

// Violations returns every CSP violation reported so far.
func (b *Browser) Violations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.violations)
}

// NoViolations fails the test if any page reported a CSP violation.
func (b *Browser) NoViolations(t testing.TB) {
	t.Helper()
	if v := b.Violations(); len(v) != 0 {
		t.Fatalf("%d CSP violations: %q", len(v), v)
	}
}

// Do runs the steps within Timeout, failing the test with what on error.
func (b *Browser) Do(t testing.TB, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Click clicks the first element sel matches, within Timeout. When the page
// replaces the node between the query and the click (a navigation or a
// live refresh lands in between), Chrome answers "Could not find node with
// given id" before any input is dispatched: the click is tried again on
// the node the page now holds, so a stale node is never a test failure
// and a click is never sent twice.
func (b *Browser) Click(t testing.TB, what, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(sel))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node with given id") || ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// Eval evaluates expr in the page within Timeout.
func Eval[T any](t testing.TB, b *Browser, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// WaitFor polls a condition in the page until it holds, failing the test
// with the page's text after Timeout. A navigation under way (the page
// replacing itself) is polled through.
func (b *Browser) WaitFor(t testing.TB, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("(() => { try { return !!("+expr+"); } catch (e) { return false; } })()"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		<-tick.C
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	t.Fatalf("waiting for %s: not true after %s (%v)\npage: %.2000s", what, Timeout, last, body)
}

// WaitLive waits until a live page (the inbox, the runs, a run) follows
// the log and has caught up with it once: the page fetches itself when its
// stream opens and replaces what changed, so an element found before then
// may be gone when it is clicked.
func (b *Browser) WaitLive(t testing.TB) {
	t.Helper()
	b.WaitFor(t, "the live page to follow the log", `document.body.dataset.following === "1" && document.body.dataset.synced === "1"`)
}

// Enroll opens an invitation URL (ORIGIN/enroll#TOKEN, as `agentrt
// approvers invite` prints it), creates a passkey on the virtual
// authenticator and waits for the inbox the console signs the new
// approver in to.
func (b *Browser) Enroll(t testing.TB, invitation string) {
	t.Helper()
	b.Do(t, "enroll with "+invitation, chromedp.Navigate(invitation), chromedp.WaitVisible("#enroll", chromedp.NodeVisible), chromedp.Click("#enroll"))
	b.WaitFor(t, "the inbox after enrolling", `document.querySelector("#inbox") !== null || document.querySelector("#empty") !== null`)
}

// Screenshot writes the whole page as a PNG to path.
func (b *Browser) Screenshot(t testing.TB, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
