package proxy

import (
	"context"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/proxy/internal/reply"
	"github.com/agentrt/agentrt/trace"
)

// Subscriptions are kept per host session. The proxy subscribes upstream
// once per URI, on the server the URI routes to, while at least one host
// session subscribes; notifications/resources/updated from that server
// reach only the sessions that subscribed (the SDK keeps each host-facing
// server's subscribers and sends only to them).

// maxSubscriptions bounds the URIs subscribed upstream at once.
const maxSubscriptions = 1000

type subscription struct {
	u        *upstream
	sessions map[*sdk.ServerSession]bool
}

type subscriptions struct {
	mu sync.Mutex // held across the upstream request, so the table and the servers agree
	m  map[string]*subscription
	// sem bounds the updates being delivered at once; past it one is
	// dropped rather than block a server's reader.
	sem chan struct{}
}

func (p *Proxy) anySubscribes() bool {
	for _, u := range p.upstreams() {
		if u.allowed[SurfaceResources] && u.subscribes {
			return true
		}
	}
	return false
}

func (p *Proxy) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	if !goodURI(uri) {
		return refuse("the URI is empty, too long or holds control characters")
	}
	u, err := p.routeURI(ctx, uri, SurfaceResources)
	if err != nil {
		return err
	}
	if u == nil || !u.subscribes {
		return refuse("no server forwards subscriptions to the resource %s", reply.Quote(uri, boundURI))
	}
	p.subs.mu.Lock()
	defer p.subs.mu.Unlock()
	s := p.subs.m[uri]
	if s == nil {
		if len(p.subs.m) >= maxSubscriptions {
			return refuse("%d resources are subscribed already, the most the proxy keeps", maxSubscriptions)
		}
		c, cancel := u.ctx(ctx)
		defer cancel()
		if err := u.conn.Subscribe(c, uri); err != nil {
			return upstreamError(u.name, err)
		}
		s = &subscription{u: u, sessions: map[*sdk.ServerSession]bool{}}
		p.subs.m[uri] = s
	}
	s.sessions[req.Session] = true
	return nil
}

func (p *Proxy) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) error {
	uri := req.Params.URI
	p.subs.mu.Lock()
	defer p.subs.mu.Unlock()
	s := p.subs.m[uri]
	if s == nil || !s.sessions[req.Session] {
		return nil
	}
	delete(s.sessions, req.Session)
	if len(s.sessions) > 0 {
		return nil
	}
	delete(p.subs.m, uri)
	// A host on the current protocol unsubscribes by cancelling its
	// listening stream: the server's subscription ends all the same.
	c, cancel := s.u.ctx(context.WithoutCancel(ctx))
	defer cancel()
	if err := s.u.conn.Unsubscribe(c, uri); err != nil {
		p.logf("agentrt-proxy: server %s refused to end a subscription: %s", s.u.name, trace.Sanitize(err.Error()))
	}
	return nil
}

// resourceUpdated hears server's notifications/resources/updated. One
// about a URI the proxy did not subscribe to on that server is dropped.
func (p *Proxy) resourceUpdated(server string, n *sdk.ResourceUpdatedNotificationParams) {
	if n == nil || !goodURI(n.URI) {
		return
	}
	p.subs.mu.Lock()
	s := p.subs.m[n.URI]
	ok := s != nil && s.u.name == server
	p.subs.mu.Unlock()
	if !ok {
		return
	}
	select {
	case p.subs.sem <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-p.subs.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.hostsMu.Lock()
		hosts := append([]*sdk.Server(nil), p.hosts...)
		p.hostsMu.Unlock()
		for _, h := range hosts {
			_ = h.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: n.URI})
		}
	}()
}
