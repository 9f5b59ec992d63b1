package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/sign"
	"github.com/agentrt/agentrt/internal/token"
)

// The headers a signed request carries.
const (
	HeaderTimestamp = sign.HeaderTimestamp
	HeaderNonce     = sign.HeaderNonce
	HeaderSignature = sign.HeaderSignature
)

// Sign returns the X-Approval-Signature of a request: "v1=" and the hex
// HMAC-SHA256 under secret of timestamp (unix seconds), nonce, method,
// path and body, joined by "\n" with the body last. path is the escaped
// path, with "?" and the query when there is one, as the Handler sees it
// (after any http.StripPrefix).
func Sign(secret []byte, timestamp int64, nonce, method, path string, body []byte) string {
	return sign.Sign(secret, timestamp, nonce, method, path, body)
}

// NewRequest builds a request for base+path signed under secret at time
// at, with a fresh random nonce. path is what the Handler sees, so base
// carries any prefix a proxy strips. A body is sent as JSON.
func NewRequest(ctx context.Context, secret []byte, at time.Time, method, base, path string, body []byte) (*http.Request, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("webhook: path %q must start with /", path)
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + path)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	nonce := token.Hex(16)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	signed := u.EscapedPath()
	if u.RawQuery != "" {
		signed += "?" + u.RawQuery
	}
	if base != "" {
		if bu, err := url.Parse(base); err == nil {
			signed = strings.TrimPrefix(signed, strings.TrimSuffix(bu.EscapedPath(), "/"))
		}
	}
	ts := at.Unix()
	req.Header.Set(HeaderTimestamp, fmt.Sprint(ts))
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderSignature, Sign(secret, ts, nonce, method, signed, body))
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Client is a front end's side of the webhook: each call is one signed
// request. Redirects are never followed, so a signed request goes only
// where Base says.
type Client struct {
	// Base is the webhook's URL, with any prefix a proxy strips.
	Base string
	// Secret is the Handler's Config.Secret.
	Secret []byte
	// HTTP sends the requests; nil is a client with a 30-second timeout.
	// Its redirect policy is replaced by one that follows none.
	HTTP *http.Client
	// Now is the clock requests are signed at; nil is time.Now.
	Now func() time.Time
}

// StatusError is a refusal from the Handler: its status and its body.
type StatusError struct {
	Status int
	Body   Error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("webhook: %d %s: %s", e.Status, e.Body.Code, e.Body.Error)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, accept string) ([]byte, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	req, err := NewRequest(ctx, c.Secret, now(), method, c.Base, path, body)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	hc := http.Client{Timeout: 30 * time.Second}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		se := &StatusError{Status: resp.StatusCode}
		if json.Unmarshal(b, &se.Body) != nil {
			se.Body = Error{Error: "the response is not a webhook error", Code: CodeInternal}
		}
		return nil, se
	}
	return b, nil
}

// ErrorCode returns the code of a refusal, or "" for any other error.
func ErrorCode(err error) Code {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Body.Code
	}
	return ""
}

func runPath(runID string) string { return "/runs/" + url.PathEscape(runID) }

// Pending lists the run's pending approvals.
func (c *Client) Pending(ctx context.Context, runID string) (List, error) {
	b, err := c.do(ctx, http.MethodGet, runPath(runID)+"/approvals", nil, "")
	if err != nil {
		return List{}, err
	}
	var l List
	return l, json.Unmarshal(b, &l)
}

// Show returns one approval.
func (c *Client) Show(ctx context.Context, runID, approvalID string) (approver.Approval, error) {
	b, err := c.do(ctx, http.MethodGet, runPath(runID)+"/approvals/"+url.PathEscape(approvalID), nil, "")
	if err != nil {
		return approver.Approval{}, err
	}
	var a approver.Approval
	return a, json.Unmarshal(b, &a)
}

// ShowText returns one approval's text rendering.
func (c *Client) ShowText(ctx context.Context, runID, approvalID string) (string, error) {
	b, err := c.do(ctx, http.MethodGet, runPath(runID)+"/approvals/"+url.PathEscape(approvalID), nil, "text/plain")
	return string(b), err
}

func (c *Client) decide(ctx context.Context, action string, d approver.Answer) (Result, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return Result{}, err
	}
	b, err := c.do(ctx, http.MethodPost, runPath(d.RunID)+"/approvals/"+url.PathEscape(d.ApprovalID)+"/"+action, body, "")
	if err != nil {
		return Result{}, err
	}
	var r Result
	return r, json.Unmarshal(b, &r)
}

// Approve grants d.ApprovalID if it is still the approval of hash d.Hash.
func (c *Client) Approve(ctx context.Context, d approver.Answer) (Result, error) {
	return c.decide(ctx, "approve", d)
}

// Reject refuses d.ApprovalID if it is still the approval of hash d.Hash.
func (c *Client) Reject(ctx context.Context, d approver.Answer) (Result, error) {
	return c.decide(ctx, "reject", d)
}

// Cancel ends the run.
func (c *Client) Cancel(ctx context.Context, runID, by, note string) (Result, error) {
	body, err := json.Marshal(CancelRequest{RunID: runID, By: by, Note: note})
	if err != nil {
		return Result{}, err
	}
	b, err := c.do(ctx, http.MethodPost, runPath(runID)+"/cancel", body, "")
	if err != nil {
		return Result{}, err
	}
	var r Result
	return r, json.Unmarshal(b, &r)
}
