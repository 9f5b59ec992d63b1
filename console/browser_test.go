package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "rewrite the screenshots in docs/")

// chromiumPath finds Debian's chromium. Under CI a browser test that cannot
// find it fails: the browser tests are the console's proof.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH; make test installs it (make chromium)")
	}
	t.Skip("no chromium on PATH; install it with 'make chromium' to run the browser tests")
	return ""
}

// consoleEnv is a console on a real database, served on loopback, and the
// tools its runs call.
type consoleEnv struct {
	t      *testing.T
	path   string
	store  *sqlite.Store
	origin string
	srv    *httptest.Server

	mu    sync.Mutex
	calls map[string]int
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	st, path := testrig.DB(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	origin := "http://localhost:" + port
	cfg := console.DefaultConfig(st, origin)
	cfg.PollInterval = 100 * time.Millisecond
	h, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)
	return &consoleEnv{t: t, path: path, store: st, origin: origin, srv: srv, calls: map[string]int{}}
}

// tool is a write tool that counts each execution by its arguments' path.
func (e *consoleEnv) tool() agentrt.Tool {
	return agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "write_note", Description: "Write a note.", SideEffect: agentrt.LocalMutation, Timeout: time.Second,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"text":{"type":"string"},"link":{"type":"string"}},"required":["name"]}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			var a struct{ Name string }
			json.Unmarshal(c.Args, &a)
			e.mu.Lock()
			e.calls[a.Name]++
			e.mu.Unlock()
			return agentrt.ToolResult{Content: json.RawMessage(`{"written":true}`), Summary: "wrote " + a.Name}, nil
		},
	}
}

func (e *consoleEnv) called(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[name]
}

func (e *consoleEnv) driver(pd agentrt.PolicyDecision, ds ...agentrt.Decision) *agentrt.Driver {
	e.t.Helper()
	d, err := agentrt.NewDriver(agentrt.Config{
		EngineConfig: agentrt.EngineConfig{
			Store: e.store,
			Policy: agentrt.PolicyFunc(func(context.Context, agentrt.ToolRequest, agentrt.RunView) (agentrt.PolicyDecision, error) {
				return pd, nil
			}),
			Tools: []agentrt.Tool{e.tool()},
		},
		Agent: &scripted.Agent{Decisions: ds},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// The arguments a hostile model chooses: markup, a script end tag, a
// javascript: link and a right-to-left override, each of which would set
// window.__pwned if it ran.
var hostile = map[string]string{
	"name": "first",
	"text": `<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>` + "report\u202Etxt.exe",
	"link": `javascript:window.__pwned=3`,
}

func hostileCall(name string) agentrt.Decision {
	args := map[string]string{"name": name, "text": hostile["text"], "link": hostile["link"]}
	b, _ := json.Marshal(args)
	return scripted.ToolCall("write_note", string(b), "write it")
}

var ask = agentrt.PolicyDecision{Outcome: agentrt.RequireApproval, Kind: "write", Reason: "writes a note",
	Presentation: json.RawMessage(`{"summary":"write a note <b>now</b>"}`), TTL: time.Hour}

// browser starts headless Chromium with a virtual WebAuthn authenticator
// (user verification on, presence automatic) and collects every Content
// Security Policy violation any page reports.
type browser struct {
	ctx        context.Context
	mu         sync.Mutex
	violations []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b := &browser{ctx: ctx}
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

func (b *browser) add(v string) {
	b.mu.Lock()
	b.violations = append(b.violations, v)
	b.mu.Unlock()
}

func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitFor polls a condition in the page until it holds or 30s pass. A
// navigation under way (the page replacing itself) is polled through.
func (b *browser) waitFor(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
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
	body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	t.Fatalf("waiting for %s: not true after 30s (%v)\npage: %.2000s", what, last, body)
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	if !*update {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pendingOf returns the run's only pending approval.
func (e *consoleEnv) pendingOf(runID string) agentrt.Approval {
	e.t.Helper()
	as, err := e.store.ListApprovals(context.Background(), runID)
	if err != nil {
		e.t.Fatal(err)
	}
	var found []agentrt.Approval
	for _, a := range as {
		if a.Status == agentrt.ApprovalPending {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		e.t.Fatalf("run %s has %d pending approvals, want 1", runID, len(found))
	}
	return found[0]
}

// agentrtBinary builds the agentrt command line of the core module.
func agentrtBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentrt")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/agentrt/agentrt/cmd/agentrt")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building agentrt: %v\n%s", err, out)
	}
	return bin
}

func runCLI(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "USER=cli-operator")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// The whole flow in a real browser with Chrome's virtual authenticator, so
// the real WebAuthn ceremonies run: an invitation enrolls a passkey, the
// approver signs out and in again with it, the inbox shows a run's pending
// write, the approval page shows the hostile arguments inert and escaped,
// and approving with the passkey lets the run resume and the tool run
// exactly once. The run's second write then appears in the inbox live and
// is decided in turn. The stored signatures verify, agentrt verify
// -decisions passes, and one byte changed in a stored signature makes it
// fail. A page left open while its approval changed decides nothing. When
// the approver is removed from the CLI, the open page's stream ends and
// the page goes to sign-in. No page reports a CSP violation during the
// whole flow.
func TestBrowser_EnrollSignInApproveWithPasskey(t *testing.T) {
	ctx := context.Background()
	e := newConsoleEnv(t)
	b := newBrowser(t)
	token, _, err := (agentrt.Operator{Store: e.store}).InviteApprover(ctx, "alice", "admin")
	if err != nil {
		t.Fatal(err)
	}
	d := e.driver(ask, hostileCall("first"), hostileCall("second"), scripted.Complete(`{"ok":true}`))
	run, err := d.Start(ctx, "write two notes", agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		t.Fatalf("Start = %s, %v", run.Status, err)
	}

	// Invite, enroll, sign out, sign in.
	b.do(t, "enroll", chromedp.Navigate(e.origin+"/enroll#"+token), chromedp.WaitVisible("#enroll", chromedp.NodeVisible), chromedp.Click("#enroll"))
	b.waitFor(t, "the inbox after enrolling", `document.querySelector("#inbox") !== null`)
	b.do(t, "sign out", chromedp.Click(`header form button`))
	b.waitFor(t, "the sign-in page", `document.querySelector("#login") !== null`)
	b.do(t, "sign in", chromedp.Click("#login"))
	b.waitFor(t, "the inbox after signing in", `document.querySelectorAll("#inbox .approval-row").length === 1`)
	b.screenshot(t, "console-inbox.png")

	// The approval, field by field, inert.
	first := e.pendingOf(run.ID)
	b.do(t, "open the approval", chromedp.Click("#inbox a.open"))
	b.waitFor(t, "the approval page", `document.querySelector("#approve") !== null`)
	if got := eval[string](t, b, `document.getElementById("hash").textContent`); got != first.Hash {
		t.Fatalf("the page shows hash %q, the approval has %q", got, first.Hash)
	}
	args := eval[string](t, b, `document.getElementById("args").textContent`)
	for _, want := range []string{`<img src=x onerror="window.__pwned=1">`, `</script><script>`, `javascript:window.__pwned=3`, `report\u{202E}txt.exe`} {
		if !strings.Contains(args, want) {
			t.Errorf("the arguments' text does not show %q escaped: %q", want, args)
		}
	}
	if strings.ContainsRune(args, '\u202e') {
		t.Error("the page holds a raw U+202E")
	}
	if n := eval[int](t, b, `document.querySelectorAll("main img, main script, main a[href^='javascript:'], main b").length`); n != 0 {
		t.Errorf("%d elements were made from the model's text", n)
	}
	if eval[bool](t, b, `window.__pwned !== undefined`) {
		t.Fatal("the payload ran")
	}
	b.screenshot(t, "console-approval.png")

	b.do(t, "approve", chromedp.SendKeys("#note", "looks right"), chromedp.Click("#approve"))
	b.waitFor(t, "the signed approval", `(document.getElementById("result").className === "ok")`)
	got, err := e.store.GetApproval(ctx, run.ID, first.ID)
	if err != nil || got.Status != agentrt.ApprovalApproved || got.DecidedBy != "alice" || got.Signature == nil || got.Note != "looks right" {
		t.Fatalf("after approving: %+v, %v", got, err)
	}
	ap, err := e.store.GetApprover(ctx, got.ApproverID)
	if err != nil || ap.Kind != agentrt.ApproverPasskey {
		t.Fatalf("approver = %+v, %v", ap, err)
	}
	if err := agentrt.VerifyDecision(ap, *got.Signature); err != nil {
		t.Fatalf("the stored passkey signature does not verify: %v", err)
	}

	// The inbox follows the log: the run resumes, runs the tool once, and
	// pauses on its second write, which appears without a reload.
	b.do(t, "the inbox", chromedp.Navigate(e.origin+"/"))
	b.waitFor(t, "an empty inbox", `document.querySelector("#empty") !== null`)
	b.waitFor(t, "the live stream", `document.body.dataset.following === "1"`)
	if r, err := d.Resume(ctx, run.ID); err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("Resume = %s, %v", r.Status, err)
	}
	if n := e.called("first"); n != 1 {
		t.Fatalf("the first write ran %d times, want once", n)
	}
	b.waitFor(t, "the second approval to appear live", `document.querySelectorAll("#inbox .approval-row").length === 1 && Number(document.body.dataset.updated || 0) > 0`)

	// A page left open while its approval changed decides nothing.
	second := e.pendingOf(run.ID)
	b.do(t, "open the second approval", chromedp.Click("#inbox a.open"))
	b.waitFor(t, "the second approval page", `document.querySelector("#approve") !== null`)
	forge(t, e, second.ID)
	b.do(t, "approve the stale page", chromedp.Click("#approve"))
	b.waitFor(t, "the stale page refused", `document.getElementById("result").className === "problem"`)
	if a, _ := e.store.GetApproval(ctx, run.ID, second.ID); a.Status != agentrt.ApprovalPending {
		t.Fatalf("a stale page decided the approval: %s", a.Status)
	}
	// Put back as it was (the chain still records the original), read
	// again, it is decided.
	writeSQL(t, e.path, `UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ?`, string(second.Presentation), second.Hash, second.ID)
	b.do(t, "reload", chromedp.Reload())
	b.waitFor(t, "the approval page again", `document.querySelector("#approve") !== null`)
	b.do(t, "approve the second", chromedp.Click("#approve"))
	b.waitFor(t, "the second signed approval", `document.getElementById("result").className === "ok"`)
	if r, err := d.Resume(ctx, run.ID); err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("the second Resume = %s, %v", r.Status, err)
	}
	if e.called("first") != 1 || e.called("second") != 1 {
		t.Fatalf("writes ran %d and %d times, want once each", e.called("first"), e.called("second"))
	}

	// The timeline shows the decisions signed.
	b.do(t, "the run's timeline", chromedp.Navigate(e.origin+"/runs/"+run.ID))
	b.waitFor(t, "the timeline", `document.getElementById("run-status").textContent.startsWith("COMPLETED")`)
	if n := eval[int](t, b, `[...document.querySelectorAll("#approvals tr")].filter(r => r.textContent.includes("alice") && r.textContent.includes("yes")).length`); n != 2 {
		t.Fatalf("the timeline shows %d signed approvals by alice, want 2", n)
	}

	// Offline verification with the CLI, then one byte changed.
	bin := agentrtBinary(t)
	if out, code := runCLI(t, bin, "-db", e.path, "verify", "-decisions"); code != 0 || !strings.Contains(out, "decisions: 2 signed") {
		t.Fatalf("agentrt verify -decisions: exit %d\n%s", code, out)
	}
	sig := *got.Signature
	sig.Signature = append([]byte(nil), sig.Signature...)
	sig.Signature[len(sig.Signature)/2] ^= 0x01
	raw, _ := json.Marshal(sig)
	writeSQL(t, e.path, `UPDATE approvals SET signature_json = ? WHERE id = ?`, string(raw), first.ID)
	if out, code := runCLI(t, bin, "-db", e.path, "verify", "-decisions"); code != 1 || !strings.Contains(out, first.ID) {
		t.Fatalf("agentrt verify -decisions after one byte changed: exit %d, want 1 naming %s\n%s", code, first.ID, out)
	}

	// The approver is removed from the CLI while a live page is open: the
	// page's stream ends and the page goes to sign-in, and the session
	// serves nothing more.
	b.do(t, "the runs page", chromedp.Navigate(e.origin+"/runs"))
	b.waitFor(t, "the live stream of the runs page", `document.body.dataset.following === "1"`)
	if out, code := runCLI(t, bin, "-db", e.path, "approvers", "remove", "alice", "-by", "admin"); code != 0 {
		t.Fatalf("agentrt approvers remove alice: exit %d\n%s", code, out)
	}
	b.waitFor(t, "the sign-in page after the removal", `location.pathname === "/login" && document.querySelector("#login") !== null`)
	if n := eval[int](t, b, `(async () => (await fetch("/runs", {credentials: "same-origin", redirect: "manual"})).status)()`, chromedp.EvalAwaitPromise); n == 200 {
		t.Fatal("the removed approver's session still serves /runs")
	}
	if n := eval[int](t, b, `(async () => (await fetch("/events", {credentials: "same-origin"})).status)()`, chromedp.EvalAwaitPromise); n != 401 {
		t.Fatalf("a stream for the removed approver's session: %d, want 401", n)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.violations) != 0 {
		t.Fatalf("%d CSP violations: %q", len(b.violations), b.violations)
	}
}

// forge rewrites a pending approval's presentation and its hash, as a
// writer of the database (or a re-pause) could, after the page was shown.
func forge(t *testing.T, e *consoleEnv, approvalID string) {
	t.Helper()
	ctx := context.Background()
	var a agentrt.Approval
	for _, r := range mustRuns(t, e) {
		if x, err := e.store.GetApproval(ctx, r, approvalID); err == nil {
			a = x
		}
	}
	a.Presentation = json.RawMessage(`{"summary":"something else"}`)
	h, err := agentrt.ApprovalHash(a.Kind, a.Capability, a.Presentation, a.Request)
	if err != nil {
		t.Fatal(err)
	}
	writeSQL(t, e.path, `UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ?`, string(a.Presentation), h, approvalID)
}

func mustRuns(t *testing.T, e *consoleEnv) []string {
	runs, err := e.store.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

// writeSQL changes the database file directly, as another writer could.
func writeSQL(t *testing.T, path, q string, args ...any) {
	t.Helper()
	db, err := sqlOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%s changed %d rows", q, n)
	}
}

// Every state-changing request needs the console's Origin and the CSRF
// token: with the browser's own session cookie, a POST without the token,
// with a wrong one, or from a foreign Origin is 403 and decides nothing. A
// run that requires signed grants is refused an unsigned CLI approval, and
// one whose policy requires a signature cannot be resumed after an
// unsigned CLI approval: the tool never runs. Cancel from the run page
// cancels the run as the signed-in approver.
func TestBrowser_StateChangesNeedOriginCSRFAndSignatures(t *testing.T) {
	ctx := context.Background()
	e := newConsoleEnv(t)
	b := newBrowser(t)
	token, _, err := (agentrt.Operator{Store: e.store}).InviteApprover(ctx, "bob", "admin")
	if err != nil {
		t.Fatal(err)
	}
	signed := ask
	signed.RequireSignature = true
	d := e.driver(signed, hostileCall("guarded"), scripted.Complete(`{}`))
	run, err := d.Start(ctx, "a guarded write", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	a := e.pendingOf(run.ID)
	b.do(t, "enroll", chromedp.Navigate(e.origin+"/enroll#"+token), chromedp.WaitVisible("#enroll", chromedp.NodeVisible), chromedp.Click("#enroll"))
	b.waitFor(t, "the inbox", `document.querySelector("#inbox") !== null`)

	cookies, err := chromedp.Run(b.ctx, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		r, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{e.origin + "/"}})
		return r.Cookies, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var session string
	for _, c := range cookies {
		if c.Name == "agentrt_session" {
			session = c.Value
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				t.Errorf("the session cookie is HttpOnly %v SameSite %q", c.HTTPOnly, c.SameSite)
			}
		}
	}
	csrf := eval[string](t, b, `document.querySelector('meta[name="csrf"]').content`)
	if session == "" || csrf == "" {
		t.Fatal("no session cookie or CSRF token")
	}
	post := func(origin, token string) int {
		body := fmt.Sprintf(`{"run_id":%q,"approval_id":%q,"hash":%q,"decision":"approve"}`, run.ID, a.ID, a.Hash)
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/decide/begin", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("X-CSRF-Token", token)
		}
		req.AddCookie(&http.Cookie{Name: "agentrt_session", Value: session})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, c := range map[string][2]string{
		"no token": {e.origin, ""}, "wrong token": {e.origin, csrf + "x"}, "foreign origin": {"http://evil.test", csrf}, "no origin": {"", csrf},
	} {
		if code := post(c[0], c[1]); code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, code)
		}
	}
	if code := post(e.origin, csrf); code != http.StatusOK {
		t.Fatalf("with the origin and the token: status %d, want 200", code)
	}
	if x, _ := e.store.GetApproval(ctx, run.ID, a.ID); x.Status != agentrt.ApprovalPending {
		t.Fatalf("a refused request decided the approval: %s", x.Status)
	}

	// An unsigned CLI approval: recorded, but Resume refuses the grant.
	bin := agentrtBinary(t)
	if out, code := runCLI(t, bin, "-db", e.path, "approve", run.ID, "-yes"); code != 0 {
		t.Fatalf("agentrt approve: exit %d\n%s", code, out)
	}
	if _, err := d.Resume(ctx, run.ID); !errors.Is(err, agentrt.ErrUnsignedGrant) {
		t.Fatalf("Resume after an unsigned CLI approval = %v, want ErrUnsignedGrant", err)
	}
	if n := e.called("guarded"); n != 0 {
		t.Fatalf("the guarded write ran %d times", n)
	}
	// A run that requires signed grants refuses the unsigned CLI approval.
	l := agentrt.DefaultLimits()
	l.RequireSignedGrant = true
	d2 := e.driver(ask, hostileCall("strict"), scripted.Complete(`{}`))
	run2, err := d2.Start(ctx, "a strict run", l)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runCLI(t, bin, "-db", e.path, "approve", run2.ID, "-yes"); code != 1 || !strings.Contains(out, "signature") {
		t.Fatalf("agentrt approve of a strict run: exit %d, want 1\n%s", code, out)
	}

	// Cancel from the run page.
	b.do(t, "the run", chromedp.Navigate(e.origin+"/runs/"+run2.ID))
	b.do(t, "cancel", chromedp.WaitVisible("form.cancel button", chromedp.NodeVisible), chromedp.Click("form.cancel button"))
	b.waitFor(t, "the cancelled run", `document.getElementById("run-status").textContent.startsWith("CANCELLED")`)
	if r, _ := e.store.GetRun(ctx, run2.ID); r.Status != agentrt.RunCancelled {
		t.Fatalf("run status %s after cancel", r.Status)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.violations) != 0 {
		t.Fatalf("%d CSP violations: %q", len(b.violations), b.violations)
	}
}
