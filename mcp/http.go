package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// RedirectError is a 3xx the client refused to follow. It names only the
// host the server pointed at: a path or query may carry what the operator's
// round tripper added.
type RedirectError struct{ Host string }

func (e *RedirectError) Error() string {
	return fmt.Sprintf("mcp: the server redirected to host %q; redirects are not followed", e.Host)
}

// Is matches ErrRedirect.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirect }

// httpClient is a copy of the operator's client (or a fresh one) that
// follows no redirect and taps and bounds every body.
func httpClient(base *http.Client, t *tap) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	rt := c.Transport
	if rt == nil {
		rt = pooledTransport()
	}
	c.Transport = &limitedTransport{inner: rt, tap: t}
	// A credential a round tripper adds would otherwise follow a 307 to
	// another host.
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return &RedirectError{Host: req.URL.Host}
	}
	return c
}

// maxIdlePerServer is how many idle connections to one server a client
// keeps for reuse. net/http's default keeps 2, so a proxy with more calls
// in flight to one server than that would open, and close again, a
// connection for nearly every call.
const maxIdlePerServer = 64

// pooledTransport is net/http's default transport, keeping up to
// maxIdlePerServer idle connections to the server: one per connection,
// so one server's calls share its pool and no other's.
func pooledTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerServer
	return t
}

// limitedTransport shows outgoing requests and incoming responses to the tap
// and bounds response bodies.
type limitedTransport struct {
	inner http.RoundTripper
	tap   *tap
}

// CloseIdleConnections closes the idle connections of the transport it
// wraps, when that has any.
func (l *limitedTransport) CloseIdleConnections() { closeIdle(l.inner) }

// closeIdle closes rt's idle connections, if it keeps any.
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (l *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(req.Body, MaxResponseBodyBytes+1))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			l.tap.sent(req.Context(), msg)
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := l.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// A redirect ends here, so no error on the way up can print where it
	// pointed beyond the host.
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		host := ""
		if loc, err := resp.Location(); err == nil {
			host = loc.Host
		}
		return nil, &RedirectError{Host: host}
	}
	// The long-lived GET stream is bounded per event; every other body whole.
	stream := req.Method == http.MethodGet
	if !stream && resp.ContentLength > MaxResponseBodyBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes declared, limit %d", ErrBodyTooLarge, resp.ContentLength, MaxResponseBodyBytes)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	b := &tapBody{rc: resp.Body, tap: l.tap, stream: stream}
	switch strings.ToLower(mt) {
	case "application/json":
		b.mode = bodyJSON
	case "text/event-stream":
		b.mode = bodySSE
	}
	resp.Body = b
	return resp, nil
}

const (
	bodyOther = iota
	bodyJSON
	bodySSE
)

// tapBody bounds a response body and records each JSON-RPC message in it
// before the read that completes the message returns, so the tap knows a
// result before the SDK can act on it. A JSON body is recorded whole at its
// end; an event stream event by event, and only the events the SDK acts on
// (no name, or "message", with data).
type tapBody struct {
	rc     io.ReadCloser
	tap    *tap
	mode   int
	stream bool
	n      int64
	err    error

	buf  []byte // JSON: the body so far; SSE: the partial line
	sse  sseEvent
	dead bool // a malformed stream: the SDK fails it; record nothing more
}

type sseEvent struct {
	name    string
	data    []byte
	hasData bool
	size    int
}

func (b *tapBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	// Only the long-lived event stream may exceed the cap in total; its
	// events are bounded one by one in feed.
	if !(b.stream && b.mode == bodySSE) && b.n > MaxResponseBodyBytes {
		b.err = fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, MaxResponseBodyBytes)
		return 0, b.err
	}
	switch b.mode {
	case bodyJSON:
		b.buf = append(b.buf, p[:n]...)
		if errors.Is(err, io.EOF) {
			b.recordJSON(b.buf)
			b.buf = nil
		}
	case bodySSE:
		if e := b.feed(p[:n], errors.Is(err, io.EOF)); e != nil {
			b.err = e
			return 0, e
		}
	}
	return n, err
}

func (b *tapBody) Close() error { return b.rc.Close() }

func (b *tapBody) recordJSON(body []byte) {
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		b.tap.received(msg)
	}
}

// feed parses event-stream bytes the way the SDK's scanner does: lines end
// in \n (a trailing \r is dropped), a blank line ends an event, "event"
// names it, "data" lines are trimmed and joined with \n, a line with no
// colon is malformed, and the stream's end ends the last event.
func (b *tapBody) feed(p []byte, eof bool) error {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.buf = append(b.buf, p...)
			if err := b.grow(len(p)); err != nil {
				return err
			}
			break
		}
		line := append(b.buf, p[:i]...)
		if err := b.grow(i + 1); err != nil {
			return err
		}
		b.buf = b.buf[:0]
		p = p[i+1:]
		b.line(line)
	}
	if eof {
		if len(b.buf) > 0 {
			b.line(b.buf)
			b.buf = nil
		}
		b.dispatch()
	}
	return nil
}

func (b *tapBody) grow(n int) error {
	b.sse.size += n
	if b.sse.size > MaxResponseBodyBytes {
		return fmt.Errorf("%w: an event of over %d bytes", ErrBodyTooLarge, MaxResponseBodyBytes)
	}
	return nil
}

func (b *tapBody) line(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		b.dispatch()
		return
	}
	key, val, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		b.dead = true
		return
	}
	switch string(key) {
	case "event":
		b.sse.name = strings.TrimSpace(string(val))
	case "data":
		if b.sse.hasData {
			b.sse.data = append(b.sse.data, '\n')
		}
		b.sse.data = append(b.sse.data, bytes.TrimSpace(val)...)
		b.sse.hasData = true
	}
}

func (b *tapBody) dispatch() {
	ev := b.sse
	b.sse = sseEvent{}
	if b.dead || len(ev.data) == 0 || (ev.name != "" && ev.name != "message") {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(ev.data); err == nil {
		b.tap.received(msg)
	}
}
