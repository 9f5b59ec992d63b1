//lint:file-ignore SA1019 MCP logging and sampling are deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards logging under policy and must refuse sampling, so it handles both.

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Notifications are the hooks a Connection calls with what its server sends
// besides answers. Each field may be nil; a hook runs on the connection's
// reader, so it must not block.
type Notifications struct {
	// Log hears each notifications/message.
	Log func(*sdk.LoggingMessageParams)
	// ResourceUpdated hears each notifications/resources/updated.
	ResourceUpdated func(*sdk.ResourceUpdatedNotificationParams)
	// PromptListChanged hears each notifications/prompts/list_changed:
	// what the server's prompts/list said may no longer hold.
	PromptListChanged func()
	// ResourceListChanged hears each notifications/resources/list_changed:
	// what the server's resources/list and resources/templates/list said
	// may no longer hold. (A tools/list_changed is the Connection's own:
	// it re-lists and refuses a tool that no longer matches its pin.)
	ResourceListChanged func()
	// Sample, when set, answers the server's sampling/createMessage
	// requests (and the client advertises sampling); nil refuses them.
	Sample func(context.Context, *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error)
	// Elicit, when set, answers the server's elicitation/create requests
	// (and the client advertises elicitation); nil refuses them.
	Elicit func(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error)
	// Refused hears each request the server sent that the client refused:
	// sampling/createMessage, elicitation/create, roots/list, and any other
	// server-to-client request but ping. Unless Sample or Elicit is set, a
	// client built here asks its user nothing on a server's behalf.
	Refused func(method string)
}

// clientOptions are the SDK client's: no roots handler, and no sampling
// or elicitation handler unless a hook answers them (so only those are
// advertised), the tool watcher, and the hooks.
func (c *Connection) clientOptions() *sdk.ClientOptions {
	o := &sdk.ClientOptions{
		Logger:                 c.srv.Logger,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.watch.notify() },
	}
	if n := c.srv.Notifications; n != nil {
		if n.Log != nil {
			o.LoggingMessageHandler = func(_ context.Context, req *sdk.LoggingMessageRequest) { n.Log(req.Params) }
		}
		if n.ResourceUpdated != nil {
			o.ResourceUpdatedHandler = func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { n.ResourceUpdated(req.Params) }
		}
		if n.PromptListChanged != nil {
			o.PromptListChangedHandler = func(context.Context, *sdk.PromptListChangedRequest) { n.PromptListChanged() }
		}
		if n.ResourceListChanged != nil {
			o.ResourceListChangedHandler = func(context.Context, *sdk.ResourceListChangedRequest) { n.ResourceListChanged() }
		}
		if n.Sample != nil {
			o.CreateMessageHandler = func(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
				return n.Sample(ctx, req.Params)
			}
		}
		if n.Elicit != nil {
			o.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return n.Elicit(ctx, req.Params)
			}
		}
	}
	return o
}

// refuseRequests answers every request the server sends but ping (and
// sampling or elicitation a hook answers) with an error, and reports it,
// before the SDK could route it anywhere.
func (c *Connection) refuseRequests(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		n := c.srv.Notifications
		switch {
		case method == "sampling/createMessage" && n != nil && n.Sample != nil:
			return next(ctx, method, req)
		case method == "elicitation/create" && n != nil && n.Elicit != nil:
			// Straight to the hook: the SDK's own check of the requested
			// schema refuses schemas the protocol allows (a titled
			// multi-select whose items also name their type); whoever
			// answers checks what it is shown.
			params, _ := req.GetParams().(*sdk.ElicitParams)
			if params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create without params"}
			}
			return n.Elicit(ctx, params)
		}
		switch method {
		case "sampling/createMessage", "elicitation/create", "roots/list":
			if n := c.srv.Notifications; n != nil && n.Refused != nil {
				n.Refused(method)
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "this client does not serve " + method}
		}
		return next(ctx, method, req)
	}
}

// Capabilities are what the server said it offers at initialize.
func (c *Connection) Capabilities() *sdk.ServerCapabilities {
	if r := c.cs.InitializeResult(); r != nil && r.Capabilities != nil {
		return r.Capabilities
	}
	return &sdk.ServerCapabilities{}
}

// The requests beyond tools a surface forwards. Each is bounded by ctx and
// by the transport's message bound; what the result holds is the caller's
// to bound and escape, since only the caller knows where it goes.

// ListResources reads one page of resources.
func (c *Connection) ListResources(ctx context.Context, cursor string) (*sdk.ListResourcesResult, error) {
	return c.cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
}

// ListResourceTemplates reads one page of resource templates.
func (c *Connection) ListResourceTemplates(ctx context.Context, cursor string) (*sdk.ListResourceTemplatesResult, error) {
	return c.cs.ListResourceTemplates(ctx, &sdk.ListResourceTemplatesParams{Cursor: cursor})
}

// ReadResource reads one resource.
func (c *Connection) ReadResource(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	return c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
}

// ListPrompts reads one page of prompts.
func (c *Connection) ListPrompts(ctx context.Context, cursor string) (*sdk.ListPromptsResult, error) {
	return c.cs.ListPrompts(ctx, &sdk.ListPromptsParams{Cursor: cursor})
}

// GetPrompt gets one prompt with its arguments.
func (c *Connection) GetPrompt(ctx context.Context, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	return c.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
}

// Complete asks for completions of one argument.
func (c *Connection) Complete(ctx context.Context, p *sdk.CompleteParams) (*sdk.CompleteResult, error) {
	return c.cs.Complete(ctx, p)
}

// SetLoggingLevel asks the server to send log messages at level and above.
// A 2026-07-28 server has no logging/setLevel: the level is kept and sent
// in the _meta of every later request, as that revision asks.
func (c *Connection) SetLoggingLevel(ctx context.Context, level sdk.LoggingLevel) error {
	if c.Protocol() >= protocolVersion {
		c.logLevel.Store(string(level))
		return nil
	}
	return c.cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: level})
}

// carryLogLevel puts the level SetLoggingLevel kept into the _meta of each
// request to a 2026-07-28 server, beside what the SDK puts there.
func (c *Connection) carryLogLevel(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		level, _ := c.logLevel.Load().(string)
		if p := req.GetParams(); level != "" && p != nil && method != "server/discover" {
			m := p.GetMeta()
			if m == nil {
				m = map[string]any{}
			}
			if _, ok := m[sdk.MetaKeyLogLevel]; !ok {
				m[sdk.MetaKeyLogLevel] = level
				p.SetMeta(m)
			}
		}
		return next(ctx, method, req)
	}
}

// Progress is what a tool call's caller hears of the server's progress
// notifications for that call.
type Progress func(*sdk.ProgressNotificationParams)

type progressKey struct{}

// WithProgress makes a tool call made with the returned context ask the
// server for progress, and deliver what it sends to fn. The token the
// server sees is the connection's own, never the caller's.
func WithProgress(ctx context.Context, fn Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressFrom(ctx context.Context) Progress {
	fn, _ := ctx.Value(progressKey{}).(Progress)
	return fn
}

// progressRouter maps the tokens of calls in flight to their listeners.
// The message tap hands it each notifications/progress as it is read, in
// the order the server sent it, so a notification sent before the answer
// is queued before the answer is read; a call's finish delivers what its
// queue holds before the call returns.
type progressRouter struct {
	next atomic.Int64
	mu   sync.Mutex
	m    map[string]*progressRoute
}

type progressRoute struct {
	q    chan *sdk.ProgressNotificationParams
	done chan struct{}
}

// progressQueue bounds the notifications one call holds undelivered; past
// it one is dropped rather than block the connection's reader.
const progressQueue = 256

// progressDrain bounds how long a finished call waits for its listener
// to take what its queue holds.
const progressDrain = 5 * time.Second

func (r *progressRouter) add(fn Progress) (string, func()) {
	tok := "p" + strconv.FormatInt(r.next.Add(1), 10)
	rt := &progressRoute{q: make(chan *sdk.ProgressNotificationParams, progressQueue), done: make(chan struct{})}
	go func() {
		defer close(rt.done)
		for p := range rt.q {
			fn(p)
		}
	}()
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]*progressRoute{}
	}
	r.m[tok] = rt
	r.mu.Unlock()
	return tok, func() {
		r.mu.Lock()
		delete(r.m, tok)
		close(rt.q)
		r.mu.Unlock()
		select {
		case <-rt.done:
		case <-time.After(progressDrain):
		}
	}
}

// deliver queues a notification for its call by its token; one for no
// call in flight is dropped.
func (r *progressRouter) deliver(p *sdk.ProgressNotificationParams) {
	if p == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.m[fmt.Sprint(p.ProgressToken)]
	if rt == nil {
		return
	}
	select {
	case rt.q <- p:
	default:
	}
}

// progressMessage reads a notifications/progress the tap saw, or nil.
func progressMessage(msg jsonrpc.Message) *sdk.ProgressNotificationParams {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() || req.Method != "notifications/progress" {
		return nil
	}
	var p sdk.ProgressNotificationParams
	if err := json.Unmarshal(req.Params, &p); err != nil || p.ProgressToken == nil {
		return nil
	}
	return &p
}

// Subscribe asks the server for notifications/resources/updated about uri.
func (c *Connection) Subscribe(ctx context.Context, uri string) error {
	return c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})
}

// Unsubscribe ends a subscription Subscribe made.
func (c *Connection) Unsubscribe(ctx context.Context, uri string) error {
	return c.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})
}
