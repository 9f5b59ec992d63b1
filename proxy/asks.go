//lint:file-ignore SA1019 MCP sampling is deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards it only on a server's opt-in, so it handles it.

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// A server's sampling and elicitation requests are refused unless its
// entry forwards them (forward: ["sampling", "elicitation"]). A forwarded
// request goes to the host session whose call to that server's tool is in
// flight (the latest, when there are several), only if that host offers
// the capability. Each is a run of its own through the gate, so the
// request and the host's answer are in the hash chain: the decision holds
// the request, the tool's result the answer. Both are bounded, as are the
// requests in flight per server and the time a host may take.

const (
	// maxAsksInFlight bounds one server's forwarded requests at once.
	maxAsksInFlight = 4
	// askTimeout bounds how long a host (or its user) may take to answer.
	askTimeout = 10 * time.Minute
	// multiRoundTrip is the first protocol version under which a server
	// asks its client through the answer (SEP-2322), not with a request
	// while the call waits; the proxy does not relay that yet.
	multiRoundTrip = "2026-07-28"
)

// askTool is the gate's tool for one server's forwarded requests of one
// kind. It is never offered to the host: its name holds a ':', which no
// proxied tool's name may.
type askTool struct {
	p      *Proxy
	server string
	kind   ServerRequest
}

func askToolName(server string, kind ServerRequest) string { return string(kind) + ":" + server }

func (a askTool) Spec() agentrt.ToolSpec {
	return agentrt.ToolSpec{Name: askToolName(a.server, a.kind), Description: "A request of server " + a.server + " forwarded to the host.",
		SideEffect: agentrt.ReadOnly, Timeout: askTimeout, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

type askCtxKey struct{}

// Call sends the recorded request to the host session the proposal
// named, and records its answer, bounded.
func (a askTool) Call(ctx context.Context, call agentrt.ToolCall) (agentrt.ToolResult, error) {
	ss, _ := ctx.Value(askCtxKey{}).(*sdk.ServerSession)
	if ss == nil {
		return agentrt.ToolResult{}, errors.New("no host session to ask")
	}
	var res any
	var err error
	switch a.kind {
	case RequestSampling:
		var params sdk.CreateMessageParams
		if err := json.Unmarshal(call.Args, &params); err != nil {
			return agentrt.ToolResult{}, fmt.Errorf("the request will not decode: %v", err)
		}
		res, err = ss.CreateMessage(ctx, &params)
	case RequestElicitation:
		var params sdk.ElicitParams
		if err := json.Unmarshal(call.Args, &params); err != nil {
			return agentrt.ToolResult{}, fmt.Errorf("the request will not decode: %v", err)
		}
		// The schema travels beside the request, for the sending
		// middleware (elicitSchema) to put back: ServerSession.Elicit
		// checks the host's answer against the schema with the SDK's own
		// check, which refuses schemas the protocol allows.
		schema := params.RequestedSchema
		params.RequestedSchema = nil
		res, err = ss.Elicit(context.WithValue(ctx, elicitSchemaKey{}, schema), &params)
	}
	if err != nil {
		return agentrt.ToolResult{}, fmt.Errorf("the host refused: %s", trace.Sanitize(trace.Truncate(err.Error(), boundReason)))
	}
	b, err := json.Marshal(res)
	if err != nil {
		return agentrt.ToolResult{}, err
	}
	if len(b) > maxForwardBytes {
		return agentrt.ToolResult{}, fmt.Errorf("the host's answer holds %d bytes, more than the %d the proxy forwards", len(b), maxForwardBytes)
	}
	c, err := agentrt.CanonicalJSON(b)
	if err != nil {
		return agentrt.ToolResult{}, err
	}
	return agentrt.ToolResult{Content: c, Summary: fmt.Sprintf("%s from server %s answered by the host: %d bytes", a.kind, a.server, len(c))}, nil
}

// callers are the host sessions with a call in flight, per server.
type callers struct {
	mu  sync.Mutex
	m   map[string][]*sdk.ServerSession
	sem map[string]chan struct{}
}

func (c *callers) enter(server string, ss *sdk.ServerSession) {
	if ss == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[server] = append(c.m[server], ss)
}

func (c *callers) leave(server string, ss *sdk.ServerSession) {
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

func (c *callers) latest(server string) *sdk.ServerSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m[server]
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}

// refusedAsk is what a server is told of a request the proxy will not
// forward now.
func refusedAsk(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// askHost asks the host on server's behalf (p.ask) and decodes its
// answer as a T; an answer that will not decode is refused.
func askHost[T any](ctx context.Context, p *Proxy, server string, kind ServerRequest, params any) (*T, error) {
	raw, err := p.ask(ctx, server, kind, params)
	if err != nil {
		return nil, err
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, refusedAsk("the host's answer will not decode")
	}
	return &out, nil
}

// ask forwards one request of server's to the host, recorded as a run.
func (p *Proxy) ask(ctx context.Context, server string, kind ServerRequest, params any) (json.RawMessage, error) {
	method := map[ServerRequest]string{RequestSampling: "sampling/createMessage", RequestElicitation: "elicitation/create"}[kind]
	ss := p.callers.latest(server)
	if ss == nil {
		p.refused(server, method)
		return nil, refusedAsk("the proxy forwards %s only during a call to one of this server's tools", method)
	}
	var caps *sdk.ClientCapabilities
	if ip := ss.InitializeParams(); ip != nil {
		caps = ip.Capabilities
		if ip.ProtocolVersion >= multiRoundTrip {
			p.refused(server, method)
			return nil, refusedAsk("the host's protocol (%s) takes no request while it waits on an answer; the proxy does not forward %s to it", quote(ip.ProtocolVersion, boundName), method)
		}
	}
	if caps == nil || (kind == RequestSampling && caps.Sampling == nil) || (kind == RequestElicitation && caps.Elicitation == nil) {
		p.refused(server, method)
		return nil, refusedAsk("the host does not offer %s", kind)
	}
	args, err := json.Marshal(params)
	if err != nil || len(args) > maxForwardBytes {
		p.refused(server, method)
		return nil, refusedAsk("the request holds more than the %d bytes the proxy forwards", maxForwardBytes)
	}
	sem := p.callers.sem[server]
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	default:
		p.refused(server, method)
		return nil, refusedAsk("%d requests of this server already wait on the host, the most the proxy forwards at once", maxAsksInFlight)
	}
	runID := p.newRunID()
	name := askToolName(server, kind)
	gs, err := p.gate.Begin(ctx, runID, "forward "+method+" from server "+server, p.limits())
	if err != nil {
		return nil, p.askFailed(err)
	}
	defer gs.Close()
	st, err := gs.Step(ctx)
	if err != nil || st == nil {
		return nil, p.askFailed(fmt.Errorf("step: %v", err))
	}
	v, err := st.Propose(ctx, agentrt.Decision{Kind: agentrt.KindToolCall, Tool: name, Args: args, Reason: "server " + server + " asked the host"})
	if err != nil {
		return nil, p.askFailed(err)
	}
	if v.Outcome != agentrt.VerdictAllowed {
		p.closeRun(ctx, gs, "not forwarded")
		return nil, refusedAsk("the proxy does not forward %s from this server", method)
	}
	obs, err := st.Execute(context.WithValue(ctx, askCtxKey{}, ss))
	p.closeRun(ctx, gs, "answered")
	if err != nil || obs.Kind != agentrt.ObsToolResult {
		why := obs.Summary
		if why == "" && err != nil {
			why = err.Error()
		}
		return nil, refusedAsk("the request was not answered: %s", quote(why, boundReason))
	}
	return obs.Content, nil
}

func (p *Proxy) askFailed(err error) error {
	p.logf("agentrt-proxy: a server's request could not be recorded: %s", trace.Sanitize(err.Error()))
	return refusedAsk("the request could not be recorded")
}

// refused records a server request the proxy did not forward.
func (p *Proxy) refused(server, method string) {
	p.logf("agentrt-proxy: server %s asked for %s, which the proxy does not forward now; refused", server, quote(method, boundName))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.ix.RecordRefusal(ctx, p.cfg.Session, server, method, p.now()); err != nil {
		p.logf("agentrt-proxy: the refusal could not be recorded: %s", trace.Sanitize(err.Error()))
	}
}

type elicitSchemaKey struct{}

// elicitSchema puts an elicitation's requested schema back on the request
// the host is sent (askTool.Call).
func elicitSchema(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		schema := ctx.Value(elicitSchemaKey{})
		r, ok := req.(*sdk.ServerRequest[sdk.Params])
		if method != "elicitation/create" || schema == nil || !ok {
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
