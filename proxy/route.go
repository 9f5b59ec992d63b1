package proxy

import (
	"context"

	"github.com/agentrt/agentrt/proxy/internal/reply"
	"github.com/agentrt/agentrt/proxy/internal/uritemplate"
)

// Resources route by the most specific claim: a server whose last listing
// holds the URI, else the server whose URI template matches it with the
// most literal text. A URI two servers claim equally is refused, never
// guessed.

// claimOf is one server's claim on a URI: held by its listing, or matched
// by its most specific template (nil when neither).
func (u *upstream) claimOf(uri string) (held bool, best *uritemplate.Template) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.uris[uri] {
		return true, nil
	}
	for _, t := range u.templates {
		if t.Raw == uri {
			// A completion's reference names the template itself.
			return true, nil
		}
	}
	for _, t := range u.templates {
		if t.Match(uri) && (best == nil || uritemplate.MoreSpecific(t, best) > 0) {
			best = t
		}
	}
	return false, best
}

// routeURI finds the one server a URI belongs to among those forwarding
// s. It lists resources and templates first when some server has never
// been listed (a host may read a URI it learned elsewhere). A URI two
// servers claim equally is a refusal naming both.
func (p *Proxy) routeURI(ctx context.Context, uri string, s Surface) (*upstream, error) {
	for _, u := range p.upstreams() {
		if !u.allowed[s] || !u.allowed[SurfaceResources] {
			continue
		}
		u.mu.Lock()
		listed := u.listed
		u.mu.Unlock()
		if !listed {
			if _, err := p.listResources(ctx); err != nil {
				return nil, err
			}
			if _, err := p.listTemplates(ctx); err != nil {
				return nil, err
			}
			break
		}
	}
	return p.routeListed(uri, s)
}

func (p *Proxy) routeListed(uri string, s Surface) (*upstream, error) {
	type match struct {
		u *upstream
		t *uritemplate.Template
	}
	var forwarding, holders []*upstream
	var best []match
	for _, u := range p.upstreams() {
		if !u.allowed[s] {
			continue
		}
		forwarding = append(forwarding, u)
		held, t := u.claimOf(uri)
		switch {
		case held:
			holders = append(holders, u)
		case t == nil:
		case len(best) == 0:
			best = []match{{u, t}}
		default:
			switch uritemplate.MoreSpecific(t, best[0].t) {
			case 1:
				best = []match{{u, t}}
			case 0:
				best = append(best, match{u, t})
			}
		}
	}
	switch {
	case len(holders) == 1:
		return holders[0], nil
	case len(holders) > 1:
		return nil, refuse("servers %s and %s both list the resource %s; the proxy routes it to neither", holders[0].name, holders[1].name, reply.Quote(uri, boundURI))
	case len(best) == 1:
		return best[0].u, nil
	case len(best) > 1:
		return nil, refuse("servers %s and %s both claim the resource %s with templates %s and %s; the proxy routes it to neither",
			best[0].u.name, best[1].u.name, reply.Quote(uri, boundURI), reply.Quote(best[0].t.Raw, boundURI), reply.Quote(best[1].t.Raw, boundURI))
	case len(forwarding) == 1:
		return forwarding[0], nil
	}
	return nil, nil
}
