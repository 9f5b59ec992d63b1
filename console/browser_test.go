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
	"sync/atomic"
	"testing"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/console/consoletest"
	"github.com/agentrt/agentrt/internal/testrig"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "rewrite the screenshots in docs/")

// consoleEnv is a console on a real database, served on loopback, and the
// tools its runs call.
type consoleEnv struct {
	t      *testing.T
	path   string
	store  *sqlite.Store
	origin string
	srv    *httptest.Server

	mu     sync.Mutex
	calls  map[string]int
	before atomic.Pointer[func(*http.Request)]
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	st, path := testrig.DB(t)
	return newConsoleEnvOn(t, st, path)
}

// newConsoleEnvOn serves a console on the database st opened at path.
func newConsoleEnvOn(t *testing.T, st *sqlite.Store, path string) *consoleEnv {
	t.Helper()
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
	e := &consoleEnv{t: t, path: path, store: st, origin: origin, calls: map[string]int{}}
	// before, when a test sets it, runs ahead of each request the console
	// serves, as another writer of the database could at that moment.
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := e.before.Load(); f != nil {
			(*f)(r)
		}
		h.ServeHTTP(w, r)
	})
	e.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: serve, ReadHeaderTimeout: 10 * time.Second}}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
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

// screenshot rewrites a screenshot in docs/ under -update.
func screenshot(t *testing.T, b *consoletest.Browser, name string) {
	t.Helper()
	if *update {
		b.Screenshot(t, filepath.Join("..", "docs", name))
	}
}

// invite invites an approver called name and returns the enrollment URL,
// as agentrt approvers invite prints it.
func (e *consoleEnv) invite(name string) string {
	e.t.Helper()
	token, _, err := (agentrt.Operator{Store: e.store}).InviteApprover(context.Background(), name, "admin")
	if err != nil {
		e.t.Fatal(err)
	}
	return e.origin + "/enroll#" + token
}

// startWaiting starts a run with d and fails unless it waits for a person.
func (e *consoleEnv) startWaiting(d *agentrt.Driver, goal string) agentrt.Run {
	e.t.Helper()
	run, err := d.Start(context.Background(), goal, agentrt.DefaultLimits())
	if err != nil || run.Status != agentrt.RunWaiting {
		e.t.Fatalf("Start = %s, %v", run.Status, err)
	}
	return run
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
	b := consoletest.NewBrowser(t)
	invitation := e.invite("alice")
	d := e.driver(ask, hostileCall("first"), hostileCall("second"), scripted.Complete(`{"ok":true}`))
	run := e.startWaiting(d, "write two notes")

	// Invite, enroll, sign out, sign in.
	b.Enroll(t, invitation)
	b.WaitFor(t, "the inbox after enrolling", `document.querySelector("#inbox") !== null`)
	b.Click(t, "sign out", `header form button`)
	b.WaitFor(t, "the sign-in page", `document.querySelector("#login") !== null`)
	b.Click(t, "sign in", "#login")
	b.WaitFor(t, "the inbox after signing in", `document.querySelectorAll("#inbox .approval-row").length === 1`)
	screenshot(t, b, "console-inbox.png")

	// The approval, field by field, inert.
	first := e.pendingOf(run.ID)
	b.WaitLive(t)
	b.Click(t, "open the approval", "#inbox a.open")
	b.WaitFor(t, "the approval page", `document.querySelector("#approve") !== null`)
	if got := consoletest.Eval[string](t, b, `document.getElementById("hash").textContent`); got != first.Hash {
		t.Fatalf("the page shows hash %q, the approval has %q", got, first.Hash)
	}
	args := consoletest.Eval[string](t, b, `document.getElementById("args").textContent`)
	for _, want := range []string{`<img src=x onerror="window.__pwned=1">`, `</script><script>`, `javascript:window.__pwned=3`, `report\u{202E}txt.exe`} {
		if !strings.Contains(args, want) {
			t.Errorf("the arguments' text does not show %q escaped: %q", want, args)
		}
	}
	if strings.ContainsRune(args, '\u202e') {
		t.Error("the page holds a raw U+202E")
	}
	if n := consoletest.Eval[int](t, b, `document.querySelectorAll("main img, main script, main a[href^='javascript:'], main b").length`); n != 0 {
		t.Errorf("%d elements were made from the model's text", n)
	}
	if consoletest.Eval[bool](t, b, `window.__pwned !== undefined`) {
		t.Fatal("the payload ran")
	}
	screenshot(t, b, "console-approval.png")

	b.Do(t, "approve", chromedp.SendKeys("#note", "looks right"), chromedp.Click("#approve"))
	b.WaitFor(t, "the signed approval", `(document.getElementById("result").className === "ok")`)
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
	b.Do(t, "the inbox", chromedp.Navigate(e.origin+"/"))
	b.WaitFor(t, "an empty inbox", `document.querySelector("#empty") !== null`)
	b.WaitFor(t, "the live stream", `document.body.dataset.following === "1"`)
	if r, err := d.Resume(ctx, run.ID); err != nil || r.Status != agentrt.RunWaiting {
		t.Fatalf("Resume = %s, %v", r.Status, err)
	}
	if n := e.called("first"); n != 1 {
		t.Fatalf("the first write ran %d times, want once", n)
	}
	b.WaitFor(t, "the second approval to appear live", `document.querySelectorAll("#inbox .approval-row").length === 1 && Number(document.body.dataset.updated || 0) > 0`)

	// A page left open while its approval changed decides nothing.
	second := e.pendingOf(run.ID)
	b.WaitLive(t)
	b.Click(t, "open the second approval", "#inbox a.open")
	b.WaitFor(t, "the second approval page", `document.querySelector("#approve") !== null`)
	forge(t, e, second.ID)
	b.Click(t, "approve the stale page", "#approve")
	b.WaitFor(t, "the stale page refused", `document.getElementById("result").className === "problem"`)
	if a, _ := e.store.GetApproval(ctx, run.ID, second.ID); a.Status != agentrt.ApprovalPending {
		t.Fatalf("a stale page decided the approval: %s", a.Status)
	}
	// Put back as it was (the chain still records the original), read
	// again, it is decided.
	writeSQL(t, e.path, `UPDATE approvals SET presentation_json = ?, hash = ? WHERE id = ?`, string(second.Presentation), second.Hash, second.ID)
	b.Do(t, "reload", chromedp.Reload())
	b.WaitFor(t, "the approval page again", `document.querySelector("#approve") !== null`)
	b.Click(t, "approve the second", "#approve")
	b.WaitFor(t, "the second signed approval", `document.getElementById("result").className === "ok"`)
	if r, err := d.Resume(ctx, run.ID); err != nil || r.Status != agentrt.RunCompleted {
		t.Fatalf("the second Resume = %s, %v", r.Status, err)
	}
	if e.called("first") != 1 || e.called("second") != 1 {
		t.Fatalf("writes ran %d and %d times, want once each", e.called("first"), e.called("second"))
	}

	// The timeline shows the decisions signed.
	b.Do(t, "the run's timeline", chromedp.Navigate(e.origin+"/runs/"+run.ID))
	b.WaitFor(t, "the timeline", `document.getElementById("run-status").textContent.startsWith("COMPLETED")`)
	if n := consoletest.Eval[int](t, b, `[...document.querySelectorAll("#approvals tr")].filter(r => r.textContent.includes("alice") && r.textContent.includes("yes")).length`); n != 2 {
		t.Fatalf("the timeline shows %d signed approvals by alice, want 2", n)
	}
	marks := consoletest.Eval[[]string](t, b, `[...document.querySelectorAll("#timeline .stage.approval .mark")].map(m =>
		[m.querySelector(".badge").textContent, m.querySelector(".by").textContent, m.querySelector(".signed").textContent].join("|"))`)
	if len(marks) != 2 || marks[0] != "approved|alice|signed" || marks[1] != "approved|alice|signed" {
		t.Fatalf("the timeline's approval stages read %q, want two approved by alice, signed", marks)
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
	b.Do(t, "the runs page", chromedp.Navigate(e.origin+"/runs"))
	b.WaitFor(t, "the live stream of the runs page", `document.body.dataset.following === "1"`)
	if out, code := runCLI(t, bin, "-db", e.path, "approvers", "remove", "alice", "-by", "admin"); code != 0 {
		t.Fatalf("agentrt approvers remove alice: exit %d\n%s", code, out)
	}
	b.WaitFor(t, "the sign-in page after the removal", `location.pathname === "/login" && document.querySelector("#login") !== null`)
	if n := consoletest.Eval[int](t, b, `(async () => (await fetch("/runs", {credentials: "same-origin", redirect: "manual"})).status)()`, chromedp.EvalAwaitPromise); n == 200 {
		t.Fatal("the removed approver's session still serves /runs")
	}
	if n := consoletest.Eval[int](t, b, `(async () => (await fetch("/events", {credentials: "same-origin"})).status)()`, chromedp.EvalAwaitPromise); n != 401 {
		t.Fatalf("a stream for the removed approver's session: %d, want 401", n)
	}

	b.NoViolations(t)
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
	b := consoletest.NewBrowser(t)
	invitation := e.invite("bob")
	signed := ask
	signed.RequireSignature = true
	d := e.driver(signed, hostileCall("guarded"), scripted.Complete(`{}`))
	run, err := d.Start(ctx, "a guarded write", agentrt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	a := e.pendingOf(run.ID)
	b.Enroll(t, invitation)
	b.WaitFor(t, "the inbox", `document.querySelector("#inbox") !== null`)

	cookies, err := chromedp.Run(b.Context(), func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
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
	csrf := consoletest.Eval[string](t, b, `document.querySelector('meta[name="csrf"]').content`)
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
	b.Do(t, "the run", chromedp.Navigate(e.origin+"/runs/"+run2.ID))
	b.WaitLive(t)
	b.Do(t, "cancel", chromedp.WaitVisible("form.cancel button", chromedp.NodeVisible), chromedp.Click("form.cancel button"))
	b.WaitFor(t, "the cancelled run", `document.getElementById("run-status").textContent.startsWith("CANCELLED")`)
	if r, _ := e.store.GetRun(ctx, run2.ID); r.Status != agentrt.RunCancelled {
		t.Fatalf("run status %s after cancel", r.Status)
	}
	b.NoViolations(t)
}
