//lint:file-ignore SA1019 MCP sampling is deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards it only on a server's opt-in, so it handles it.

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/proxy/internal/asks"
	"github.com/agentrt/agentrt/proxy/internal/reply"
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
	c, err := asks.Ask(ctx, ss, methodOf(a.kind), call.Args, maxForwardBytes)
	var re *asks.RefusedError
	if errors.As(err, &re) {
		return agentrt.ToolResult{}, fmt.Errorf("the host refused: %s", reply.Quote(re.Err.Error(), reply.BoundReason))
	}
	if err != nil {
		return agentrt.ToolResult{}, err
	}
	return agentrt.ToolResult{Content: c, Summary: fmt.Sprintf("%s from server %s answered by the host: %d bytes", a.kind, a.server, len(c))}, nil
}

// methodOf is the method of a kind of server request.
func methodOf(kind ServerRequest) string {
	if kind == RequestSampling {
		return asks.MethodSampling
	}
	return asks.MethodElicitation
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
	method := methodOf(kind)
	ss := p.callers.Latest(server)
	if ss == nil {
		p.refused(server, method)
		return nil, refusedAsk("the proxy forwards %s only during a call to one of this server's tools", method)
	}
	var caps *sdk.ClientCapabilities
	if ip := ss.InitializeParams(); ip != nil {
		caps = ip.Capabilities
		if ip.ProtocolVersion >= multiRoundTrip {
			p.refused(server, method)
			return nil, refusedAsk("the host's protocol (%s) takes no request while it waits on an answer; the proxy does not forward %s to it", reply.Quote(ip.ProtocolVersion, reply.BoundName), method)
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
	release, ok := p.callers.Acquire(server)
	if !ok {
		p.refused(server, method)
		return nil, refusedAsk("%d requests of this server already wait on the host, the most the proxy forwards at once", maxAsksInFlight)
	}
	defer release()
	// One commit opens the run and its step with the request as the
	// decision (Gate.BeginPropose), as a tool call's does.
	d := agentrt.Decision{Kind: agentrt.KindToolCall, Tool: askToolName(server, kind), Args: args, Reason: "server " + server + " asked the host"}
	gs, st, v, err := p.gate.BeginPropose(ctx, p.newRunID(), "forward "+method+" from server "+server, p.limits(), d)
	if err != nil {
		return nil, p.askFailed(err)
	}
	defer gs.Close()
	if v.Outcome != agentrt.VerdictAllowed || st == nil {
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
		return nil, refusedAsk("the request was not answered: %s", reply.Quote(why, reply.BoundReason))
	}
	return obs.Content, nil
}

func (p *Proxy) askFailed(err error) error {
	p.logf("agentrt-proxy: a server's request could not be recorded: %s", trace.Sanitize(err.Error()))
	return refusedAsk("the request could not be recorded")
}

// refused records a server request the proxy did not forward.
func (p *Proxy) refused(server, method string) {
	p.logf("agentrt-proxy: server %s asked for %s, which the proxy does not forward now; refused", server, reply.Quote(method, reply.BoundName))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.ix.RecordRefusal(ctx, p.cfg.Session, server, method, p.now()); err != nil {
		p.logf("agentrt-proxy: the refusal could not be recorded: %s", trace.Sanitize(err.Error()))
	}
}
