package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/webhook"
)

var secret = []byte("0123456789abcdef0123456789abcdef-webhook")

// rig is a fixture database behind a real webhook server, with the
// handler, the approver and the client on the fixture's clock.
type rig struct {
	f      *fixture.Fixture
	local  *approver.Local
	srv    *httptest.Server
	client *webhook.Client

	mu    sync.Mutex
	heard []agentrt.Event
}

func newRig(t *testing.T, mod func(*webhook.Config)) *rig {
	t.Helper()
	f := fixture.New(t)
	r := &rig{f: f, local: approver.New(f.Store, nil)}
	r.local.Now = f.Clock.Now
	r.serve(t, r.local, mod)
	return r
}

func (r *rig) serve(t *testing.T, a approver.Approver, mod func(*webhook.Config)) {
	t.Helper()
	cfg := webhook.Config{Approver: a, Secret: secret, Now: r.f.Clock.Now, Observer: r.observe}
	if mod != nil {
		mod(&cfg)
	}
	h, err := webhook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.srv != nil {
		r.srv.Close()
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	r.client = &webhook.Client{Base: r.srv.URL, Secret: secret, HTTP: r.srv.Client(), Now: r.f.Clock.Now}
}

func (r *rig) observe(e agentrt.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard = append(r.heard, e)
}

// reply is a response read whole.
type reply struct {
	status int
	body   string
	header http.Header
}

// code is the error code of the reply's body, if any.
func (p reply) code() webhook.Code {
	var e webhook.Error
	json.Unmarshal([]byte(p.body), &e)
	return e.Code
}

// do sends req and checks that the response may not be cached.
func (r *rig) do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("%s %s: Cache-Control %q, want no-store", req.Method, req.URL.Path, cc)
	}
	if resp.StatusCode >= 400 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s %s: an error of type %q", req.Method, req.URL.Path, resp.Header.Get("Content-Type"))
	}
	return reply{status: resp.StatusCode, body: string(b), header: resp.Header}
}

// signed builds a request signed at the fixture's clock.
func (r *rig) signed(t *testing.T, method, path string, body []byte) *http.Request {
	t.Helper()
	req, err := webhook.NewRequest(context.Background(), secret, r.f.Clock.Now(), method, r.srv.URL, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// send signs and sends one request.
func (r *rig) send(t *testing.T, method, path string, body any) reply {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	return r.do(t, r.signed(t, method, path, b))
}

func decision(a agentrt.Approval, by string) approver.Answer {
	return approver.Answer{RunID: a.RunID, ApprovalID: a.ID, Hash: a.Hash, By: by}
}

func approvePath(a agentrt.Approval) string {
	return "/runs/" + a.RunID + "/approvals/" + a.ID + "/approve"
}
func rejectPath(a agentrt.Approval) string {
	return "/runs/" + a.RunID + "/approvals/" + a.ID + "/reject"
}
func showPath(a agentrt.Approval) string { return "/runs/" + a.RunID + "/approvals/" + a.ID }

// readFlag is a body that records whether anyone read it.
type readFlag struct {
	io.Reader
	read bool
}

func (b *readFlag) Read(p []byte) (int, error) {
	b.read = true
	return b.Reader.Read(p)
}

func newReadFlag(b []byte) *readFlag { return &readFlag{Reader: bytes.NewReader(b)} }

func (b *readFlag) Close() error { return nil }
