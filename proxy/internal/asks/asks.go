//lint:file-ignore SA1019 MCP sampling is deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards it only on a server's opt-in, so it handles it.

// Package asks is the host side of a server's sampling and elicitation
// requests the proxy forwards: which host sessions have a call to a
// server in flight (the session a server's request goes to), how many of
// a server's requests may wait on the host at once, and sending one
// recorded request to a host session and bounding its answer. Whether a
// request is forwarded, and its record, are the proxy's.
package asks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
)

// The methods of the requests forwarded.
const (
	MethodSampling    = "sampling/createMessage"
	MethodElicitation = "elicitation/create"
)

// Callers are the host sessions with a call in flight, per server, and
// each server's bound on requests waiting on a host.
type Callers struct {
	mu  sync.Mutex
	m   map[string][]*sdk.ServerSession
	sem map[string]chan struct{}
}

// NewCallers is Callers for servers, each allowed max requests at once.
func NewCallers(servers []string, max int) *Callers {
	c := &Callers{m: map[string][]*sdk.ServerSession{}, sem: map[string]chan struct{}{}}
	for _, s := range servers {
		c.sem[s] = make(chan struct{}, max)
	}
	return c
}

// Enter records that ss has a call to server in flight.
func (c *Callers) Enter(server string, ss *sdk.ServerSession) {
	if ss == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[server] = append(c.m[server], ss)
}

// Leave records that one call of ss to server ended.
func (c *Callers) Leave(server string, ss *sdk.ServerSession) {
	if ss == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[server]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i] == ss {
			c.m[server] = append(l[:i:i], l[i+1:]...)
			return
		}
	}
}

// Latest is the session whose call to server began last of those in
// flight, or nil (always nil on a nil Callers).
func (c *Callers) Latest(server string) *sdk.ServerSession {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[server]
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}

// Acquire takes one of server's places for a request waiting on the
// host; ok is false when all are taken. release gives it back.
func (c *Callers) Acquire(server string) (release func(), ok bool) {
	sem := c.sem[server]
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, true
	default:
		return nil, false
	}
}

// RefusedError is a host's refusal of a forwarded request.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return "the host refused: " + e.Err.Error() }

func (e *RefusedError) Unwrap() error { return e.Err }

// Ask sends the recorded request args of method to the host session ss
// and returns its answer in canonical JSON, refused when it holds more
// than max bytes. A host's own refusal is a *RefusedError.
func Ask(ctx context.Context, ss *sdk.ServerSession, method string, args json.RawMessage, max int) (json.RawMessage, error) {
	var res any
	var err error
	switch method {
	case MethodSampling:
		var params sdk.CreateMessageParams
		if err := json.Unmarshal(args, &params); err != nil {
			return nil, fmt.Errorf("the request will not decode: %v", err)
		}
		res, err = ss.CreateMessage(ctx, &params)
	case MethodElicitation:
		var params sdk.ElicitParams
		if err := json.Unmarshal(args, &params); err != nil {
			return nil, fmt.Errorf("the request will not decode: %v", err)
		}
		// The schema travels beside the request, for the sending
		// middleware (ElicitSchema) to put back: ServerSession.Elicit
		// checks the host's answer against the schema with the SDK's own
		// check, which refuses schemas the protocol allows.
		schema := params.RequestedSchema
		params.RequestedSchema = nil
		res, err = ss.Elicit(context.WithValue(ctx, elicitSchemaKey{}, schema), &params)
	default:
		return nil, fmt.Errorf("%s is not a request the proxy forwards", method)
	}
	if err != nil {
		return nil, &RefusedError{err}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("the host's answer holds %d bytes, more than the %d the proxy forwards", len(b), max)
	}
	return agentrt.CanonicalJSON(b)
}

type elicitSchemaKey struct{}

// ElicitSchema is a sending middleware that puts an elicitation's
// requested schema back on the request the host is sent (Ask).
func ElicitSchema(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		schema := ctx.Value(elicitSchemaKey{})
		r, ok := req.(*sdk.ServerRequest[sdk.Params])
		if method != MethodElicitation || schema == nil || !ok {
			return next(ctx, method, req)
		}
		ep, ok := r.Params.(*sdk.ElicitParams)
		if !ok || ep == nil {
			return next(ctx, method, req)
		}
		params := *ep
		params.RequestedSchema = schema
		return next(ctx, method, &sdk.ServerRequest[sdk.Params]{Session: r.Session, Params: &params, Extra: r.Extra})
	}
}
