package providers

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
)

// Exactly the limit is read; one byte over is refused by name.
func TestReadBody_RefusesABodyOverTheLimit(t *testing.T) {
	data, err := ReadBody(bytes.NewReader(make([]byte, MaxBodyBytes)))
	if err != nil || len(data) != MaxBodyBytes {
		t.Fatalf("exactly the limit: len=%d err=%v", len(data), err)
	}
	data, err = ReadBody(io.MultiReader(bytes.NewReader(make([]byte, MaxBodyBytes)), strings.NewReader("x")))
	if !errors.Is(err, ErrBodyTooLarge) || data != nil {
		t.Fatalf("one byte over: len=%d err=%v, want ErrBodyTooLarge", len(data), err)
	}
	if !strings.Contains(err.Error(), "16 MiB") {
		t.Fatalf("the error %q does not name the limit", err)
	}
}

// A 2xx body over the limit was served: it is a ServedError with zero usage
// that the caller charges its estimate for.
func TestSend_OversizedReplyIsServedWithUnknownUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for i := 0; i < 17; i++ {
			_, _ = w.Write(chunk)
		}
	}))
	defer srv.Close()
	_, err := Send(context.Background(), Client(nil), "test", srv.URL, nil, []byte(`{}`))
	var se *agentrt.ServedError
	if !errors.As(err, &se) || se.Usage != (agentrt.Usage{}) {
		t.Fatalf("err = %v, want a zero-usage ServedError", err)
	}
	if !errors.Is(err, ErrBodyTooLarge) || !errors.Is(err, agentrt.ErrUnusableUsage) {
		t.Fatalf("err = %v must match ErrBodyTooLarge and ErrUnusableUsage", err)
	}
}

// Transient statuses become TransientError carrying Retry-After; other
// non-2xx statuses are permanent StatusErrors; both carry a bounded, redacted
// excerpt.
func TestClassifyStatus_RetryableAndPermanent(t *testing.T) {
	for _, s := range []int{408, 409, 425, 429, 500, 502, 503, 529, 599} {
		err := ClassifyStatus("p", s, []byte("busy"))
		var te *agentrt.TransientError
		var se *StatusError
		if !errors.As(err, &te) || !errors.As(err, &se) || se.Status != s || se.Body != "busy" {
			t.Errorf("status %d: %v, want transient StatusError", s, err)
		}
	}
	for _, s := range []int{400, 401, 403, 404, 413, 422} {
		err := ClassifyStatus("p", s, nil)
		var te *agentrt.TransientError
		var se *StatusError
		if errors.As(err, &te) || !errors.As(err, &se) || se.Status != s {
			t.Errorf("status %d: %v, want permanent StatusError", s, err)
		}
	}
	for _, s := range []int{200, 201, 204} {
		if err := ClassifyStatus("p", s, nil); err != nil {
			t.Errorf("status %d: %v, want nil", s, err)
		}
	}
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"7"}}}
	err := ClassifyResponse("p", resp, []byte(`{"error":"slow down, sk-live-123"}`), "sk-live-123")
	var te *agentrt.TransientError
	if !errors.As(err, &te) || te.RetryAfter != 7*time.Second {
		t.Fatalf("429 with Retry-After: %v", err)
	}
	if strings.Contains(err.Error(), "sk-live-123") || !strings.Contains(err.Error(), Redacted) {
		t.Fatalf("the key was not redacted: %q", err)
	}
}

// The excerpt is bounded, one line, and shows hidden characters.
func TestClassifyStatus_BodyExcerptIsBounded(t *testing.T) {
	body := "line1\nline2\x1b[31m\u202eevil" + strings.Repeat("é", 5000)
	var se *StatusError
	if !errors.As(ClassifyStatus("p", 400, []byte(body)), &se) {
		t.Fatal("want a StatusError")
	}
	if len(se.Body) > ExcerptBytes || !strings.HasSuffix(se.Body, "…") {
		t.Fatalf("excerpt is %d bytes, want at most %d with a mark", len(se.Body), ExcerptBytes)
	}
	if strings.ContainsAny(se.Body, "\n\x1b\u202e") || !strings.Contains(se.Body, `\u{202E}`) {
		t.Fatalf("excerpt not sanitized: %q", se.Body[:60])
	}
}

// Retry-After is seconds or an HTTP date, positive and at most an hour.
func TestRetryAfter_AbsurdOrNegativeIsAbsent(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                     0,
		"0":                    0,
		"3":                    3 * time.Second,
		"3600":                 time.Hour,
		"3601":                 0,
		"-5":                   0,
		"1.5":                  0,
		"99999999999999999999": 0,
		"soon":                 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		now.Add(2 * time.Hour).Format(http.TimeFormat):    0,
	}
	for v, want := range cases {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryAfterAt(h, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", v, got, want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// Each transport failure lands in its class.
func TestClassifyTransport_EveryClass(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Post", URL: "https://x/v1", Err: err} }
	bare := []error{
		wrap(context.Canceled), wrap(context.DeadlineExceeded), wrap(timeoutErr{}),
		wrap(io.ErrUnexpectedEOF), wrap(io.EOF),
		&net.DNSError{Err: "timeout", Name: "x", IsTimeout: true},
	}
	for _, err := range bare {
		if got := ClassifyTransport(err); got != err {
			t.Errorf("%v: got %v, want it returned bare", err, got)
		}
	}
	permanent := []error{
		wrap(&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}),
		wrap(x509.UnknownAuthorityError{}), wrap(x509.HostnameError{}),
		wrap(&net.AddrError{Err: "bad", Addr: "x"}), wrap(url.InvalidHostError("x")),
		wrap(ErrBodyTooLarge), wrap(&NotLoopbackError{Addr: "192.0.2.1:80"}),
	}
	for _, err := range permanent {
		got := ClassifyTransport(err)
		var te *agentrt.TransientError
		if got != err || errors.As(got, &te) {
			t.Errorf("%v: got %v, want it permanent", err, got)
		}
	}
	transient := []error{
		wrap(&net.OpError{Op: "dial", Err: errors.New("connection refused")}),
		wrap(&net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}),
	}
	for _, err := range transient {
		var te *agentrt.TransientError
		if got := ClassifyTransport(err); !errors.As(got, &te) || !errors.Is(got, err) {
			t.Errorf("%v: got %v, want transient wrapping it", err, got)
		}
	}
	if ClassifyTransport(nil) != nil {
		t.Error("nil must classify as nil")
	}
}

// Real round trips: a refused connection is transient, an unresolvable name
// permanent, a cancelled context bare.
func TestClassifyTransport_RealRoundTrips(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Send(context.Background(), Client(nil), "p", "http://"+addr+"/v1", nil, nil)
	var te *agentrt.TransientError
	if !errors.As(err, &te) {
		t.Errorf("connection refused: %v, want transient", err)
	}
	// The resolver is stubbed so the test never leaves the machine.
	noDNS := Client(&http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "name.invalid", IsNotFound: true}
	}}})
	_, err = Send(context.Background(), noDNS, "p", "http://name.invalid/v1", nil, nil)
	if errors.As(err, &te) || err == nil {
		t.Errorf("unresolvable host: %v, want permanent", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Send(ctx, Client(nil), "p", "http://"+addr+"/v1", nil, nil)
	if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
		t.Errorf("cancelled: %v, want bare context.Canceled", err)
	}
}

// Synthesized ids are unique.
func TestSynthesizeToolUseID_UniquePerIndex(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := SynthesizeToolUseID(i % 3)
		if seen[id] || !strings.HasPrefix(id, "call_") {
			t.Fatalf("id %q repeated or malformed", id)
		}
		seen[id] = true
	}
}

// RedactURL hides user information and queries.
func TestRedactURL_HidesCredentials(t *testing.T) {
	got := RedactURL("https://bob:pw@example.com/v1?key=abc")
	if strings.Contains(got, "pw") || strings.Contains(got, "abc") || strings.Contains(got, "bob") {
		t.Fatalf("RedactURL leaked: %q", got)
	}
	if RedactURL("http://a b") != "(unparsable URL)" {
		t.Fatalf("an unparsable URL must not be repeated: %q", RedactURL("http://a b"))
	}
}
