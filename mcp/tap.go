package mcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The message tap sits below the SDK and keeps the raw result of the calls
// this package makes, exactly as the server sent it. The SDK's typed values
// cannot stand in for it: its Tool drops fields it does not know (such as
// execution), decodes numbers to float64, and its logging transport
// re-encodes. A caller puts a slot in the context of its request; the tap
// learns the request's JSON-RPC id when the SDK writes it, and fills the
// slot when a response with that id is read, before the SDK sees it.

type slotKey struct{}

// slot receives the raw response of a request. A 2026-07-28 server may
// answer input_required, and the SDK then sends the request again (a new
// id, the same context) with the input it asked for: the slot keeps the
// last answer, the one the SDK returns.
type slot struct {
	mu  sync.Mutex
	raw json.RawMessage
}

func (s *slot) fill(raw json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = append(json.RawMessage(nil), raw...)
}

// result returns the raw result, or nil if none was captured.
func (s *slot) result() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw
}

func withSlot(ctx context.Context, s *slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

// tap matches requests to responses by JSON-RPC id.
type tap struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]*slot
	// progress hears each progress notification as it is read, before
	// any message after it.
	progress func(*sdk.ProgressNotificationParams)
}

func newTap() *tap { return &tap{pending: map[jsonrpc.ID]*slot{}} }

// sent notes a request written with ctx.
func (t *tap) sent(ctx context.Context, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	s, _ := ctx.Value(slotKey{}).(*slot)
	if s == nil {
		return
	}
	t.mu.Lock()
	t.pending[req.ID] = s
	t.mu.Unlock()
}

// received fills the slot of a response's request.
func (t *tap) received(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		if p := progressMessage(msg); p != nil && t.progress != nil {
			t.progress(p)
		}
		return
	}
	t.mu.Lock()
	s := t.pending[resp.ID]
	delete(t.pending, resp.ID)
	t.mu.Unlock()
	if s != nil && resp.Error == nil {
		s.fill(resp.Result)
	}
}

// tapTransport wraps a transport whose Connection can be wrapped without
// losing anything (stdio and in-memory): the tap sees each message as the
// SDK's own line decoder produced it, whose Result is the bytes as sent.
type tapTransport struct {
	inner sdk.Transport
	tap   *tap
}

func (t *tapTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, tap: t.tap}, nil
}

type tapConn struct {
	sdk.Connection
	tap *tap
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.tap.received(msg)
	}
	return msg, err
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.tap.sent(ctx, msg)
	return c.Connection.Write(ctx, msg)
}

// drop forgets a slot whose response may never come (a call that timed out).
func (t *tap) drop(s *slot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.pending {
		if p == s {
			delete(t.pending, id)
		}
	}
}
