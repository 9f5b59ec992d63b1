package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt"
)

// ErrUnusableReply says a provider served a 2xx reply the adapter could not
// use: not the documented shape, an error object, no choice, or too large.
var ErrUnusableReply = errors.New("providers: unusable reply")

// ReplyError says why a served reply could not be used. It matches
// ErrUnusableReply, and agentrt.ErrUnusableUsage too when UsageUnknown says
// the reply's usage could not be read at all.
type ReplyError struct {
	Provider string
	Reason   string
	// Err is the cause, when there is one.
	Err error
	// UsageUnknown says the reply's usage could not be read, so the accounting
	// caller must charge its estimate.
	UsageUnknown bool
}

func (e *ReplyError) Error() string {
	msg := e.Provider + ": unusable reply: " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *ReplyError) Unwrap() error { return e.Err }

// Is matches ErrUnusableReply, and agentrt.ErrUnusableUsage when UsageUnknown.
func (e *ReplyError) Is(target error) bool {
	return target == ErrUnusableReply || (e.UsageUnknown && target == agentrt.ErrUnusableUsage)
}

// Send POSTs body as JSON to endpoint with c and returns the body of a 2xx
// reply, read under MaxBodyBytes. Every failure is classified:
// ClassifyTransport for the exchange, ClassifyResponse for a non-2xx status
// (secrets redacted from its excerpt), and a 2xx body over the limit is a
// ServedError with zero usage (the reply was served, its usage is unknown)
// wrapping ErrBodyTooLarge.
func Send(ctx context.Context, c *http.Client, provider, endpoint string, header http.Header, body []byte, secrets ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: building the request: %w", provider, err)
	}
	for k, vs := range header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, ClassifyTransport(err)
	}
	defer DrainClose(resp.Body)
	data, readErr := ReadBody(resp.Body)
	if err := ClassifyResponse(provider, resp, data, secrets...); err != nil {
		return nil, err
	}
	if readErr != nil {
		if errors.Is(readErr, ErrBodyTooLarge) {
			return nil, &agentrt.ServedError{Err: &ReplyError{Provider: provider, Reason: "the reply body is too large", Err: readErr, UsageUnknown: true}}
		}
		return nil, ClassifyTransport(readErr)
	}
	return data, nil
}

// ErrBadRequest says a ModelRequest cannot be expressed in a provider's wire
// format. It is permanent and nothing was sent.
var ErrBadRequest = errors.New("providers: the request cannot be sent")

// RequestError says why a request cannot be sent. It matches ErrBadRequest.
type RequestError struct {
	Provider string
	Reason   string
}

func (e *RequestError) Error() string {
	return e.Provider + ": the request cannot be sent: " + e.Reason
}

// Is matches ErrBadRequest.
func (e *RequestError) Is(target error) bool { return target == ErrBadRequest }

// MarshalJSON encodes v without HTML escaping, so prompts go out as written.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
