package providers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
)

// ExcerptBytes bounds the body excerpt a StatusError carries.
const ExcerptBytes = 2048

// maxRetryAfter is the longest Retry-After honoured; anything longer is
// treated as absent so a server cannot park a run.
const maxRetryAfter = time.Hour

// Transient reports whether an HTTP status is worth retrying: 408, 409, 425,
// 429 and every 5xx (529 included).
func Transient(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500 && status <= 599
}

// StatusError is a non-2xx reply. Body is a sanitized excerpt of at most
// ExcerptBytes with every API key the adapter knows replaced.
type StatusError struct {
	Provider   string
	Status     int
	Body       string
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d %s", e.Provider, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// RedirectError is a 3xx reply the client did not follow. It names only the
// host the redirect pointed to: the target's path and query, and the reply
// body that usually repeats them, are dropped.
type RedirectError struct {
	Provider string
	Status   int
	Host     string
}

func (e *RedirectError) Error() string {
	if e.Host == "" {
		return fmt.Sprintf("%s: refusing to follow a redirect (HTTP %d); set the base URL to the final endpoint", e.Provider, e.Status)
	}
	return fmt.Sprintf("%s: refusing to follow a redirect (HTTP %d) to host %q; set the base URL to the final endpoint", e.Provider, e.Status, e.Host)
}

// ClassifyStatus classifies a reply by status alone: nil for 2xx, a permanent
// *RedirectError for 3xx, an *agentrt.TransientError wrapping a *StatusError
// for a Transient status, and a permanent *StatusError otherwise. secrets are
// redacted from the body excerpt.
func ClassifyStatus(provider string, status int, body []byte, secrets ...string) error {
	return classify(provider, status, nil, body, secrets)
}

// ClassifyResponse is ClassifyStatus reading Retry-After into the errors and,
// for a redirect, the host of Location.
func ClassifyResponse(provider string, resp *http.Response, body []byte, secrets ...string) error {
	return classify(provider, resp.StatusCode, resp, body, secrets)
}

func classify(provider string, status int, resp *http.Response, body []byte, secrets []string) error {
	switch {
	case status >= 200 && status <= 299:
		return nil
	case status >= 300 && status <= 399:
		return &RedirectError{Provider: provider, Status: status, Host: redirectHost(resp)}
	}
	se := &StatusError{Provider: provider, Status: status, Body: Excerpt(body, secrets...)}
	if resp != nil {
		se.RetryAfter = RetryAfter(resp.Header)
	}
	if Transient(status) {
		return &agentrt.TransientError{Err: se, RetryAfter: se.RetryAfter}
	}
	return se
}

// redirectHost is the host a redirect reply points to, sanitized, or "".
func redirectHost(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "(unparsable location)"
	}
	if resp.Request != nil && resp.Request.URL != nil {
		u = resp.Request.URL.ResolveReference(u)
	}
	return Excerpt([]byte(u.Host))
}

// RetryAfter reads a Retry-After header given as seconds or an HTTP date. A
// value that is absent, unparsable, not in the future, or more than an hour
// away is 0.
func RetryAfter(h http.Header) time.Duration {
	return retryAfterAt(h, time.Now())
}

func retryAfterAt(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(maxRetryAfter/time.Second) {
			return 0
		}
		d = time.Duration(n) * time.Second
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0
		}
		d = t.Sub(now)
	}
	if d <= 0 || d > maxRetryAfter {
		return 0
	}
	return d
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ClassifyTransport sorts an error from http.Client.Do or from reading a
// reply body into the runtime's classes:
//
//   - returned bare, because the request may have been served: a caller's
//     cancellation or deadline, a network timeout, a connection closed or cut
//     mid-reply (io.EOF, io.ErrUnexpectedEOF);
//   - permanent, returned as is: an unresolvable host, a certificate or TLS
//     failure, a malformed address, ErrBodyTooLarge, ErrNotLoopback;
//   - anything else (a refused or reset connection, a temporary resolver
//     failure) is an *agentrt.TransientError wrapping err.
//
// nil classifies as nil.
func ClassifyTransport(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	if errors.Is(err, ErrBodyTooLarge) || errors.Is(err, ErrNotLoopback) {
		return err
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return err
		}
		if dns.IsTimeout {
			return err
		}
		return &agentrt.TransientError{Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	if permanentTransport(err) {
		return err
	}
	return &agentrt.TransientError{Err: err}
}

func permanentTransport(err error) bool {
	var (
		unknownAuth x509.UnknownAuthorityError
		hostname    x509.HostnameError
		invalid     x509.CertificateInvalidError
		verify      *tls.CertificateVerificationError
		header      tls.RecordHeaderError
		alert       tls.AlertError
		escape      url.EscapeError
		invalidHost url.InvalidHostError
		addr        *net.AddrError
		parse       *net.ParseError
	)
	return errors.As(err, &unknownAuth) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &header) || errors.As(err, &alert) ||
		errors.As(err, &escape) || errors.As(err, &invalidHost) ||
		errors.As(err, &addr) || errors.As(err, &parse)
}
