//lint:file-ignore SA1019 MCP logging and sampling are deprecated in the 2026-07-28 protocol but still sent by servers in the deprecation window; the proxy forwards logging under policy and must refuse sampling, so it handles both.

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy/internal/asks"
	"github.com/agentrt/agentrt/proxy/internal/mcp2026"
	"github.com/agentrt/agentrt/proxy/internal/reply"
	"github.com/agentrt/agentrt/proxy/internal/uritemplate"
	"github.com/agentrt/agentrt/trace"
)

// Bounds on what a server sends the host through a surface.
const (
	// maxForwardBytes bounds one forwarded result, as a tool's result is
	// bounded (mcp.DefaultMaxContentBytes).
	maxForwardBytes = mcp.DefaultMaxContentBytes
	// maxForwardItems bounds the entries of one listing, every page of
	// every server together.
	maxForwardItems = 1000
	// maxForwardPages bounds the pages read of one server's listing.
	maxForwardPages = 20
	// boundURI bounds a resource's URI.
	boundURI = 2048
	// forwardTimeout bounds one forwarded request when the server has no
	// default timeout.
	forwardTimeout = 30 * time.Second
)

// notifications are the hooks given to server name's connection: its log
// messages and the changes to its prompt and resource lists go to every
// host session (listchanged.go), and its requests for sampling,
// elicitation or roots are refused and recorded.
func (p *Proxy) notifications(sc ServerConfig) *mcp.Notifications {
	name := sc.Name
	n := &mcp.Notifications{
		Log: func(m *sdk.LoggingMessageParams) {
			// The hook runs on the connection's reader: queue, never
			// block it; a flood past the queue is dropped.
			select {
			case p.logq <- logItem{name, m}:
			default:
			}
		},
		ResourceUpdated:     func(n *sdk.ResourceUpdatedNotificationParams) { p.resourceUpdated(name, n) },
		PromptListChanged:   func() { p.changes.heard(name, SurfacePrompts) },
		ResourceListChanged: func() { p.changes.heard(name, SurfaceResources) },
		Refused: func(method string) {
			p.logf("agentrt-proxy: server %s asked for %s, which the proxy never forwards to the host; refused", name, reply.Quote(method, reply.BoundName))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := p.ix.RecordRefusal(ctx, p.cfg.Session, name, method, p.now()); err != nil {
				p.logf("agentrt-proxy: the refusal could not be recorded: %s", trace.Sanitize(err.Error()))
			}
		},
	}
	if sc.Forward[RequestSampling] {
		n.Sample = func(ctx context.Context, params *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
			return askHost[sdk.CreateMessageResult](ctx, p, name, RequestSampling, params)
		}
	}
	if sc.Forward[RequestElicitation] {
		n.Elicit = func(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error) {
			return askHost[sdk.ElicitResult](ctx, p, name, RequestElicitation, params)
		}
	}
	return n
}

// serverOptions are the host-facing server's: capabilities for the
// surfaces some server forwards or a standby server may forward once it
// loads, and the completion handler. A standby server's surfaces are
// unknown until it loads, so what its configuration allows is
// advertised, subscriptions with resources, and prompts and resources
// with listChanged: the host is told when its surfaces appear. Prompts
// and resources have listChanged too when a server forwarding them
// says it sends list_changed: the proxy passes each on.
func (p *Proxy) serverOptions() *sdk.ServerOptions {
	caps := &sdk.ServerCapabilities{}
	if p.mayAllow(SurfaceLogging) {
		caps.Logging = &sdk.LoggingCapabilities{}
	}
	if p.mayAllow(SurfaceResources) {
		caps.Resources = &sdk.ResourceCapabilities{Subscribe: p.anySubscribes() || p.standbyAllows(SurfaceResources),
			ListChanged: p.standbyAllows(SurfaceResources) || p.anyAnnounces(SurfaceResources)}
	}
	if p.mayAllow(SurfacePrompts) {
		caps.Prompts = &sdk.PromptCapabilities{ListChanged: p.standbyAllows(SurfacePrompts) || p.anyAnnounces(SurfacePrompts)}
	}
	o := &sdk.ServerOptions{Capabilities: caps}
	if caps.Resources != nil && caps.Resources.Subscribe {
		o.SubscribeHandler, o.UnsubscribeHandler = p.subscribe, p.unsubscribe
	}
	if p.mayAllow(SurfaceCompletion) {
		caps.Completions = &sdk.CompletionCapabilities{}
		o.CompletionHandler = p.complete
	}
	return o
}

func (p *Proxy) anyAllows(s Surface) bool {
	for _, u := range p.upstreams() {
		if u.allowed[s] {
			return true
		}
	}
	return false
}

// forward intercepts the surface requests on a host-facing server, and
// keeps the server to hear log messages.
func (p *Proxy) forward(s *sdk.Server) {
	p.hostsMu.Lock()
	p.hosts = append(p.hosts, s)
	p.hostsMu.Unlock()
	s.AddSendingMiddleware(asks.ElicitSchema)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if sf, ok := surfaceOf[method]; ok {
				if !p.mayAllow(sf) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the proxy does not forward " + string(sf)}
				}
				// A host that only uses prompts or resources brings a
				// standby server back too, after a new login.
				p.loadStandby(ctx)
			}
			switch method {
			case "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get":
				res, err := p.answerSurface(ctx, method, req)
				if err != nil {
					return nil, err
				}
				return completed(req, res)
			case "logging/setLevel":
				res, err := next(ctx, method, req)
				if err == nil {
					p.setLevel(ctx, req.GetParams().(*sdk.SetLoggingLevelParams).Level)
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	})
}

// answerSurface answers the surface requests the proxy assembles from
// its servers. Each listing is private to the requesting user and stale
// at once: it depends on the configuration and the servers behind it.
func (p *Proxy) answerSurface(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
	switch method {
	case "resources/list":
		return p.listResources(ctx)
	case "resources/templates/list":
		return p.listTemplates(ctx)
	case "resources/read":
		return p.readResource(ctx, req.GetParams().(*sdk.ReadResourceParams))
	case "prompts/list":
		return p.listPrompts(ctx)
	}
	return p.getPrompt(ctx, req.GetParams().(*sdk.GetPromptParams))
}

// surfaceOf names the surface of each request the proxy forwards.
var surfaceOf = map[string]Surface{"resources/list": SurfaceResources, "resources/templates/list": SurfaceResources,
	"resources/read": SurfaceResources, "resources/subscribe": SurfaceResources, "resources/unsubscribe": SurfaceResources,
	"prompts/list": SurfacePrompts, "prompts/get": SurfacePrompts, "completion/complete": SurfaceCompletion,
	"logging/setLevel": SurfaceLogging}

// refuse is the JSON-RPC error a host is given for a surface the proxy
// does not forward, or a request it cannot route.
func refuse(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// upstreamError is what the host is told of a server's failure: its text
// escaped and bounded, never the proxy's own.
func upstreamError(server string, err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &jsonrpc.Error{Code: we.Code, Message: "server " + server + ": " + reply.Quote(we.Message, reply.BoundReason)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server " + server + " did not answer"}
}

// listPages reads one server's listing page by page, at most
// maxForwardPages of them, each under the server's timeout, and hands
// each page to page; next reads a page's cursor.
func listPages[R any](ctx context.Context, u *upstream, list func(context.Context, string) (*R, error), next func(*R) string, page func(*R) error) error {
	cursor := ""
	for range maxForwardPages {
		c, cancel := u.ctx(ctx)
		res, err := list(c, cursor)
		cancel()
		if err != nil {
			return upstreamError(u.name, err)
		}
		if err := page(res); err != nil {
			return err
		}
		if cursor = next(res); cursor == "" {
			return nil
		}
	}
	return nil
}

// listResources lists every server's resources in one page: names,
// titles and descriptions escaped, URIs bounded, the whole bounded.
func (p *Proxy) listResources(ctx context.Context) (*sdk.ListResourcesResult, error) {
	out := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}, Cacheable: mcp2026.Private}
	for _, u := range p.upstreams() {
		if !u.allowed[SurfaceResources] {
			continue
		}
		uris := map[string]bool{}
		epoch := u.resourcesEpoch()
		err := listPages(ctx, u, u.conn.ListResources, func(r *sdk.ListResourcesResult) string { return r.NextCursor }, func(res *sdk.ListResourcesResult) error {
			for _, r := range res.Resources {
				if r == nil || !goodURI(r.URI) || len(out.Resources) == maxForwardItems {
					continue
				}
				uris[r.URI] = true
				out.Resources = append(out.Resources, &sdk.Resource{URI: r.URI, Name: reply.Quote(r.Name, reply.BoundName),
					Title: reply.Quote(r.Title, reply.BoundName), Description: reply.Quote(r.Description, reply.BoundReason), MIMEType: reply.Quote(r.MIMEType, reply.BoundName), Size: r.Size})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		u.keepListing(epoch, func(current bool) { u.uris, u.listedRes = uris, current })
	}
	return out, nil
}

func (p *Proxy) listTemplates(ctx context.Context) (*sdk.ListResourceTemplatesResult, error) {
	out := &sdk.ListResourceTemplatesResult{ResourceTemplates: []*sdk.ResourceTemplate{}, Cacheable: mcp2026.Private}
	for _, u := range p.upstreams() {
		if !u.allowed[SurfaceResources] {
			continue
		}
		var tmpls []*uritemplate.Template
		epoch := u.resourcesEpoch()
		err := listPages(ctx, u, u.conn.ListResourceTemplates, func(r *sdk.ListResourceTemplatesResult) string { return r.NextCursor }, func(res *sdk.ListResourceTemplatesResult) error {
			for _, r := range res.ResourceTemplates {
				if r == nil || !goodURI(r.URITemplate) || len(out.ResourceTemplates) == maxForwardItems {
					continue
				}
				if ct := uritemplate.Compile(r.URITemplate); ct != nil {
					tmpls = append(tmpls, ct)
				}
				out.ResourceTemplates = append(out.ResourceTemplates, &sdk.ResourceTemplate{URITemplate: r.URITemplate,
					Name: reply.Quote(r.Name, reply.BoundName), Title: reply.Quote(r.Title, reply.BoundName), Description: reply.Quote(r.Description, reply.BoundReason), MIMEType: reply.Quote(r.MIMEType, reply.BoundName)})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		u.keepListing(epoch, func(current bool) { u.templates, u.listedTmpl = tmpls, current })
	}
	return out, nil
}

func (u *upstream) resourcesEpoch() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.resEpoch
}

// keepListing stores what a listing of resources or templates begun at
// epoch found: keep runs under u.mu and is told whether the listing is
// still current (no list_changed came since epoch). u.listed holds once
// both kinds are current.
func (u *upstream) keepListing(epoch uint64, keep func(current bool)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	keep(epoch == u.resEpoch)
	u.listed = u.listedTmpl && u.listedRes
}

// goodURI is a URI the proxy passes on: bounded, and printable.
func goodURI(s string) bool {
	return s != "" && len(s) <= boundURI && trace.Sanitize(s) == s
}

// readResource reads a resource from the server it belongs to. Text is
// passed as data, as a tool's result is, cut at the bound and marked; a
// result whose binary content alone passes the bound is refused.
func (p *Proxy) readResource(ctx context.Context, params *sdk.ReadResourceParams) (*sdk.ReadResourceResult, error) {
	if !goodURI(params.URI) {
		return nil, refuse("the URI is empty, too long or holds control characters")
	}
	u, err := p.routeURI(ctx, params.URI, SurfaceResources)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, &jsonrpc.Error{Code: codeResourceNotFound, Message: "no server forwards a resource with that URI"}
	}
	c, cancel := u.ctx(ctx)
	defer cancel()
	res, err := u.conn.ReadResource(c, params.URI)
	if err != nil {
		return nil, upstreamError(u.name, err)
	}
	out := &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{}, Cacheable: mcp2026.Private}
	left := maxForwardBytes
	for _, rc := range res.Contents {
		if rc == nil || left <= 0 {
			continue
		}
		if len(rc.Blob) > left {
			return nil, refuse("the resource holds %d bytes of binary content, more than the %d the proxy forwards", len(rc.Blob), maxForwardBytes)
		}
		text := rc.Text
		if len(text) > left {
			text = trace.Truncate(text, left-len(" [truncated]")) + " [truncated]"
		}
		left -= len(text) + len(rc.Blob)
		out.Contents = append(out.Contents, &sdk.ResourceContents{URI: reply.Quote(rc.URI, boundURI), MIMEType: reply.Quote(rc.MIMEType, reply.BoundName), Text: text, Blob: rc.Blob})
	}
	return out, nil
}

// codeResourceNotFound is MCP's error for a resource no server has.
const codeResourceNotFound = -32002

// getPrompt gets a prompt from its server. A prompt is prose the host puts
// before the model, so its text is escaped like the proxy's own prose and
// the whole is bounded.
func (p *Proxy) getPrompt(ctx context.Context, params *sdk.GetPromptParams) (*sdk.GetPromptResult, error) {
	u, name := p.routePrompt(ctx, params.Name, SurfacePrompts)
	if u == nil {
		return nil, refuse("no server forwards a prompt named %s", reply.Quote(params.Name, reply.BoundName))
	}
	c, cancel := u.ctx(ctx)
	defer cancel()
	res, err := u.conn.GetPrompt(c, name, params.Arguments)
	if err != nil {
		return nil, upstreamError(u.name, err)
	}
	out := &sdk.GetPromptResult{Description: reply.Quote(res.Description, reply.BoundReason), Messages: []*sdk.PromptMessage{}}
	left := maxForwardBytes
	for _, m := range res.Messages {
		if m == nil || left <= 0 {
			continue
		}
		content, n := boundContent(m.Content, left)
		if content == nil {
			continue
		}
		left -= n
		out.Messages = append(out.Messages, &sdk.PromptMessage{Role: m.Role, Content: content})
	}
	return out, nil
}

// boundContent escapes a prompt message's text and refuses media past
// what is left of the bound; it returns nil for content it drops.
func boundContent(c sdk.Content, left int) (sdk.Content, int) {
	switch v := c.(type) {
	case *sdk.TextContent:
		t := bounded(v.Text, left)
		return &sdk.TextContent{Text: t}, len(t)
	case *sdk.ImageContent:
		if len(v.Data) > left {
			return &sdk.TextContent{Text: "[an image past the proxy's bound was left out]"}, 64
		}
		return &sdk.ImageContent{Data: v.Data, MIMEType: reply.Quote(v.MIMEType, reply.BoundName)}, len(v.Data)
	case *sdk.AudioContent:
		if len(v.Data) > left {
			return &sdk.TextContent{Text: "[audio past the proxy's bound was left out]"}, 64
		}
		return &sdk.AudioContent{Data: v.Data, MIMEType: reply.Quote(v.MIMEType, reply.BoundName)}, len(v.Data)
	case *sdk.EmbeddedResource:
		if v.Resource == nil || len(v.Resource.Blob) > left {
			return nil, 0
		}
		t := bounded(v.Resource.Text, left)
		return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: reply.Quote(v.Resource.URI, boundURI),
			MIMEType: reply.Quote(v.Resource.MIMEType, reply.BoundName), Text: t, Blob: v.Resource.Blob}}, len(t) + len(v.Resource.Blob)
	}
	return nil, 0
}

// bounded escapes s and cuts the escaped text at n, so the bound holds of
// what is sent, not of what the server wrote.
func bounded(s string, n int) string {
	if q := reply.Quote(s, n); len(q) <= n {
		return q
	}
	return trace.Truncate(reply.Quote(s, n), n)
}

// complete routes a completion by its reference: a prompt by its name, a
// resource template by its URI.
func (p *Proxy) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	params := req.Params
	if params == nil || params.Ref == nil {
		return nil, refuse("a completion needs a reference")
	}
	ref := *params.Ref
	var u *upstream
	switch ref.Type {
	case "ref/prompt":
		var name string
		if u, name = p.routePrompt(ctx, ref.Name, SurfaceCompletion); u != nil {
			ref.Name = name
		}
	case "ref/resource":
		var err error
		if u, err = p.routeURI(ctx, ref.URI, SurfaceCompletion); err != nil {
			return nil, err
		}
	}
	if u == nil {
		return nil, refuse("no server completes that reference")
	}
	// Only the request itself is passed on, never the host's _meta.
	fwd := &sdk.CompleteParams{Ref: &ref, Argument: params.Argument, Context: params.Context}
	c, cancel := u.ctx(ctx)
	defer cancel()
	res, err := u.conn.Complete(c, fwd)
	if err != nil {
		return nil, upstreamError(u.name, err)
	}
	out := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}, HasMore: res.Completion.HasMore, Total: res.Completion.Total}}
	for i, v := range res.Completion.Values {
		if i == 100 {
			out.Completion.HasMore = true
			break
		}
		out.Completion.Values = append(out.Completion.Values, reply.Quote(v, reply.BoundName))
	}
	return out, nil
}

// setLevel passes the level a host asked for on to every server that
// forwards logging. The SDK keeps each host session's own level and
// sends a session only what reaches it.
func (p *Proxy) setLevel(ctx context.Context, level sdk.LoggingLevel) {
	p.levelMu.Lock()
	p.level = string(level)
	p.levelMu.Unlock()
	for _, u := range p.upstreams() {
		if !u.allowed[SurfaceLogging] {
			continue
		}
		p.passLevel(ctx, u, level)
	}
}

// passLastLevel gives server u, loaded after start, the level a host
// last asked for, if one did.
func (p *Proxy) passLastLevel(ctx context.Context, u *upstream) {
	p.levelMu.Lock()
	level := p.level
	p.levelMu.Unlock()
	if level != "" && u.allowed[SurfaceLogging] {
		p.passLevel(ctx, u, sdk.LoggingLevel(level))
	}
}

// passLevel gives server u a logging level, under its timeout.
func (p *Proxy) passLevel(ctx context.Context, u *upstream, level sdk.LoggingLevel) {
	c, cancel := u.ctx(ctx)
	defer cancel()
	if err := u.conn.SetLoggingLevel(c, level); err != nil {
		p.logf("agentrt-proxy: server %s refused the logging level: %s", u.name, trace.Sanitize(err.Error()))
	}
}

// logQueue bounds the log messages waiting to be forwarded.
const logQueue = 256

type logItem struct {
	server string
	m      *sdk.LoggingMessageParams
}

// drainLogs forwards queued log messages in order, and the servers'
// list changes (listchanged.go), until Close. The queue is never closed,
// so a hook that fires late cannot panic.
func (p *Proxy) drainLogs() {
	defer close(p.logDone)
	for {
		select {
		case it := <-p.logq:
			p.forwardLog(it.server, it.m)
		case <-p.changes.kick:
			p.passListChanges()
		case <-p.logStop:
			return
		}
	}
}

// forwardLog sends one of a server's log messages to every host session,
// its logger named for the server and its data escaped and bounded.
func (p *Proxy) forwardLog(server string, m *sdk.LoggingMessageParams) {
	if u := p.upstreamNamed(server); u == nil || !u.allowed[SurfaceLogging] || m == nil {
		return
	}
	var data string
	if s, ok := m.Data.(string); ok {
		data = reply.Quote(s, reply.BoundReason)
	} else {
		b, _ := json.Marshal(m.Data)
		data = reply.Quote(string(b), reply.BoundReason)
	}
	out := &sdk.LoggingMessageParams{Level: m.Level, Logger: server, Data: data}
	if m.Logger != "" {
		out.Logger = server + "/" + reply.Quote(m.Logger, reply.BoundName)
	}
	p.hostsMu.Lock()
	hosts := append([]*sdk.Server(nil), p.hosts...)
	p.hostsMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range hosts {
		for ss := range s.Sessions() {
			_ = ss.Log(ctx, out)
		}
	}
}
