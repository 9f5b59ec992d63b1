package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/trace"
)

// Connection is one client session, shared by every tool loaded from one
// server. There is no new session: once the session drops, every call fails
// (a dropped event stream is resumed, never a call re-sent; see connect).
// Close is idempotent and safe to call while a call is in flight.
type Connection struct {
	srv  Server
	cs   *sdk.ClientSession
	tap  *tap
	proc *process // nil unless stdio
	// http is the client of an HTTP server (nil otherwise); Close closes
	// its idle connections.
	http *http.Client

	closeOnce sync.Once
	closed    chan struct{}

	watch *watcher

	progress progressRouter

	// logLevel is the level a 2026-07-28 server is sent in each request's
	// _meta ("" sends none); see SetLoggingLevel.
	logLevel atomic.Value
}

// Close ends the session and, for a stdio server, kills its process group.
func (c *Connection) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.cs != nil {
			_ = c.cs.Close()
		}
		if c.proc != nil {
			c.proc.close()
		}
		if c.http != nil {
			c.http.CloseIdleConnections()
		}
		if c.watch != nil {
			c.watch.stop()
		}
	})
	return nil
}

// serverError carries text a server chose. Its message is sanitized for a
// terminal; it still unwraps to the original.
type serverError struct{ err error }

func (e *serverError) Error() string { return trace.Sanitize(e.err.Error()) }
func (e *serverError) Unwrap() error { return e.err }

// phaseError names the step that failed (connect, which includes
// initialize, or list tools), and says "timed out after" when the step's
// own deadline fired.
func (c *Connection) phaseError(ctx context.Context, step string, err error) error {
	var oe *OriginError
	if errors.As(err, &oe) {
		return oe // one sentence: the step adds nothing
	}
	var out error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrListing) {
		out = fmt.Errorf("mcp: server %q: %s: %w after %s", c.srv.Name, step, ErrConnectTimeout, c.srv.connectTimeout())
	} else {
		out = fmt.Errorf("mcp: server %q: %s: %w", c.srv.Name, step, &serverError{err})
	}
	if c.proc != nil {
		if t := c.proc.stderrTail(); t != "" {
			out = fmt.Errorf("%w; stderr: %q", out, trace.Sanitize(t))
		}
	}
	return out
}

// connect starts or dials the server and initializes a session. ctx bounds
// only the handshake; the session outlives it.
func connect(ctx context.Context, srv *Server) (*Connection, error) {
	if err := srv.validate(); err != nil {
		return nil, err
	}
	c := &Connection{srv: *srv, tap: newTap(), closed: make(chan struct{})}
	c.tap.progress = c.progress.deliver
	c.watch = newWatcher(c)
	t, err := c.openTransport(srv)
	if err != nil {
		return nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: clientName, Version: clientVersion}, c.clientOptions())
	client.AddReceivingMiddleware(c.refuseRequests)
	client.AddSendingMiddleware(uncachedToolLists, c.carryLogLevel)
	type result struct {
		cs  *sdk.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := client.Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: askFor(srv)})
		done <- result{cs, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// A server that never answers initialize: the SDK may not notice
		// the deadline while it waits on a read, so end the process here.
		if c.proc != nil {
			c.proc.close()
		}
		r = <-done
		if r.err == nil {
			_ = r.cs.Close()
			r.err = ctx.Err()
		}
	}
	if r.err != nil {
		err := c.phaseError(ctx, "connect", r.err)
		if c.proc != nil {
			c.proc.close()
		}
		return nil, err
	}
	c.cs = r.cs
	if srv.Protocol == protocolVersion && c.Protocol() != protocolVersion {
		got := c.Protocol()
		c.Close()
		return nil, fmt.Errorf("mcp: server %q: connect: the server settled on protocol %q, and its Protocol asks for %s only", srv.Name, trace.Sanitize(got), protocolVersion)
	}
	return c, nil
}

// askFor is the revision to ask srv for: its Protocol, else the newest. The
// legacy SSE transport has no binding in 2026-07-28, so a server reached
// through it is only ever initialized.
func askFor(srv *Server) string {
	if srv.SSE {
		return legacyProtocolVersion
	}
	if srv.Protocol != "" {
		return srv.Protocol
	}
	return protocolVersion
}

// Protocol is the revision the server and this client agreed on:
// 2026-07-28 when the server answered server/discover with it, else the
// one initialize settled.
func (c *Connection) Protocol() string {
	if r := c.cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// uncachedToolLists keeps the SDK from answering a tools/list from its
// cache: under 2026-07-28 it keeps a page for the ttlMs the server gave and
// serves it without a request, where the tap captures no bytes and a tool
// the server changed would still check against the old page. The listing
// is read from the captured bytes, so zeroing the SDK's copy loses nothing.
func uncachedToolLists(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*sdk.ListToolsResult); ok && r != nil {
			r.TTLMs = 0
		}
		return res, err
	}
}

// openTransport is srv's transport, every byte read through c's tap; for
// a stdio server it starts the process.
func (c *Connection) openTransport(srv *Server) (sdk.Transport, error) {
	switch {
	case srv.transport != nil:
		return &tapTransport{inner: srv.transport(), tap: c.tap}, nil
	case len(srv.Command) > 0:
		p, err := startProcess(srv)
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: start %q: %w", srv.Name, trace.Sanitize(srv.Command[0]), err)
		}
		c.proc = p
		rw := pipeRWC{p}
		// One message line is bounded like an HTTP body.
		return &tapTransport{inner: &sdk.IOTransport{Reader: rw, Writer: rw, MaxLineLength: MaxResponseBodyBytes}, tap: c.tap}, nil
	case srv.SSE:
		// The GET stream is bounded event by event and every POST body
		// whole, as for streamable HTTP; the SDK's own event cap is the
		// same figure.
		hc, err := sseHTTPClient(srv, c.tap)
		if err != nil {
			return nil, err
		}
		c.http = hc
		return &sseTransport{inner: &sdk.SSEClientTransport{
			Endpoint:     srv.Endpoint,
			HTTPClient:   hc,
			MaxEventSize: MaxResponseBodyBytes,
		}}, nil
	default:
		c.http = httpClient(srv.HTTPClient, c.tap)
		return &sdk.StreamableClientTransport{
			Endpoint:     srv.Endpoint,
			HTTPClient:   c.http,
			MaxRetries:   MaxStreamRetries,
			OAuthHandler: srv.OAuthHandler,
		}, nil
	}
}

// withTimeout runs fn under srv's connect deadline. If the deadline (or the
// caller's cancellation) comes first, the connection fn reported opening is
// closed, so whatever fn is still doing fails, and an error is returned at
// once: a server cannot hold Load past ConnectTimeout, even in a check that
// takes no context.
func withTimeout[T any](parent context.Context, srv *Server, what string, fn func(ctx context.Context, opened func(*Connection)) (T, error)) (T, error) {
	d := srv.connectTimeout()
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	var mu sync.Mutex
	var conn *Connection
	abandoned := false
	opened := func(c *Connection) {
		mu.Lock()
		defer mu.Unlock()
		conn = c
		if abandoned {
			c.Close()
		}
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx, opened)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	mu.Lock()
	abandoned = true
	if conn != nil {
		conn.Close()
	}
	mu.Unlock()
	var zero T
	if err := parent.Err(); err != nil {
		return zero, fmt.Errorf("mcp: server %q: %s: %w", srv.Name, what, err)
	}
	return zero, fmt.Errorf("mcp: server %q: %s: %w after %s", srv.Name, what, ErrConnectTimeout, d)
}

// sseTransport detaches the SDK's SSE connection from the handshake's
// context: the SDK opens its GET stream with the context Connect is
// given, so the handshake's deadline would end the session. The stream is
// still cut when that context ends before Connect returns, and when the
// connection is closed.
type sseTransport struct{ inner *sdk.SSEClientTransport }

func (s *sseTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := s.inner.Connect(dctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			_ = conn.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	return &sseConn{Connection: conn, cancel: cancel}, nil
}

type sseConn struct {
	sdk.Connection
	cancel context.CancelFunc
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
