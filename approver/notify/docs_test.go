package notify_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/notify"
)

// verifyScript is the shell block docs/approvals.md shows after its
// "<!-- verify.sh -->" marker.
func verifyScript(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "approvals.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- verify.sh -->\n```sh\n")
	if !ok {
		t.Fatal("docs/approvals.md has no verify.sh block")
	}
	script, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the verify.sh block does not end")
	}
	return script
}

// The shell verification in docs/approvals.md, run with bash and openssl
// on a notification a real notifier sent, prints verified; with the body
// altered, or the timestamp an hour old, it refuses. openssl is not
// installed by make test: where it is missing the test is skipped, except
// in CI (CI=true), whose runners carry it, where that is a failure.
func TestDocs_ShellVerificationWithOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("openssl is not installed, and CI must run the documented verification")
		}
		t.Skip("openssl is not installed")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	f := fixture.New(t)
	s := newSink(t, fixture.NewClock())
	r := newRunner(t, f, notify.Target{URL: s.srv.URL + "/hook?channel=ops", Secret: secret})
	r.cfg.Now = time.Now // the script reads the wall clock
	s.receiver.Now = time.Now
	f.Start(t, "run-1", fixture.Send(`{"to":"a"}`))
	r.untilIdle()
	if len(s.raw) != 1 {
		t.Fatalf("%d notifications", len(s.raw))
	}
	c := s.raw[0]
	script := verifyScript(t)
	run := func(body []byte, ts string) (string, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SECRET="+string(secret), "TS="+ts, "NONCE="+c.header.Get("X-Approval-Nonce"),
			"SIG="+c.header.Get("X-Approval-Signature"), "URL_PATH="+c.path)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	ts := c.header.Get("X-Approval-Timestamp")
	if out, err := run(c.body, ts); err != nil || out != "verified" {
		t.Fatalf("the documented check of a real notification: %q, %v", out, err)
	}
	if out, err := run(bytes.Replace(c.body, []byte("run-1"), []byte("run-2"), 1), ts); err == nil || out != "refused" {
		t.Fatalf("an altered body: %q, %v", out, err)
	}
	var old int64
	fmt.Sscan(ts, &old)
	if out, err := run(c.body, fmt.Sprint(old-3600)); err == nil || out != "refused" {
		t.Fatalf("an hour-old timestamp: %q, %v", out, err)
	}
}

// A receiving server verifies each notification with a Receiver and drops
// a repeat by its ID.
func ExampleReceiver() {
	secret := []byte("the target's secret, 32 bytes or more")
	rc, err := notify.NewReceiver(secret)
	if err != nil {
		panic(err)
	}
	seen := map[string]bool{}
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := rc.Verify(r) // ErrSignature, ErrReplay, or the notification
		if err != nil {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		if seen[n.ID] { // a repeat after the notifier restarted
			return
		}
		seen[n.ID] = true
		fmt.Println(n.Type, n.RunID)
	})
	// An unsigned POST is refused.
	rec := httptest.NewRecorder()
	hook.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(`{"type":"approval.requested"}`)))
	fmt.Println(rec.Code)
	// Output:
	// 401
}
